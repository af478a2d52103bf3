// GraphiQL keeps the editors, tabs and query history in localStorage, and
// its history plugin saves each query's request headers with it, whatever
// shouldPersistHeaders says. Headers are where a user pastes an
// Authorization token, and page scripts can read localStorage, so the
// playground hands GraphiQL this storage instead: localStorage without any
// headers.

/** GraphiQL's keys start with its namespace. */
const NAMESPACE = "graphiql:";
/** The header editor's contents. */
const HEADERS_KEY = NAMESPACE + "headers";

/** Removes every "headers" property of a parsed JSON value, at any depth. */
function stripHeaders(v: unknown): void {
  if (Array.isArray(v)) {
    v.forEach(stripHeaders);
  } else if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    delete o.headers;
    Object.values(o).forEach(stripHeaders);
  }
}

/** Drops the headers from one value GraphiQL stores. */
export function withoutHeaders(value: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return value; // a query or variables text, not a structure with headers
  }
  if (parsed === null || typeof parsed !== "object") return value;
  stripHeaders(parsed);
  return JSON.stringify(parsed);
}

/** A Storage over backing that never writes request headers. */
export function headerlessStorage(backing: Storage): Storage {
  return {
    get length() {
      return backing.length;
    },
    key: (i) => backing.key(i),
    getItem: (k) => backing.getItem(k),
    removeItem: (k) => backing.removeItem(k),
    // GraphiQL's "clear storage" leaves other keys of the origin alone.
    clear() {
      const own: string[] = [];
      for (let i = 0; i < backing.length; i++) {
        const k = backing.key(i);
        if (k?.startsWith(NAMESPACE)) own.push(k);
      }
      own.forEach((k) => backing.removeItem(k));
    },
    setItem(k, value) {
      if (k === HEADERS_KEY) {
        backing.removeItem(k);
        return;
      }
      backing.setItem(k, withoutHeaders(value));
    },
  };
}
