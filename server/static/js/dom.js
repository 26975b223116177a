// Tiny DOM helpers: every text goes through textContent (server data is never parsed as HTML).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "text") el.textContent = value;
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// A link only for http(s) URLs; anything else is shown as text.
export function safeLink(url, text) {
  if (typeof url === "string" && /^https?:\/\//i.test(url)) {
    return h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, text || url);
  }
  return h("span", {}, text || "");
}

export function labelChip(label) {
  const name = label || "no verdict";
  const kind = { SUPPORTS: "sup", REFUTES: "ref" }[label] || (label ? "nei" : "none");
  return h("span", { class: `chip chip-${kind}`, text: name });
}

export function fmt(value, digits = 2) {
  return typeof value === "number" && Number.isFinite(value) ? value.toFixed(digits) : String(value ?? "");
}

// The child of `parent` with data-key `key`, created by make() and appended when missing.
export function keyed(parent, key, make) {
  for (const child of parent.children) if (child.dataset.key === key) return child;
  const el = make();
  el.dataset.key = key;
  parent.append(el);
  return el;
}
