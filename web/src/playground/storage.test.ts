import { afterEach, describe, expect, it } from "vitest";
import { headerlessStorage, withoutHeaders } from "./storage";

const TOKEN = "arp_pasted-into-the-header-editor";

afterEach(() => localStorage.clear());

describe("playground storage", () => {
  it("keeps no request headers from GraphiQL's history, tabs or header editor", () => {
    const s = headerlessStorage(localStorage);
    const item = { query: "{ viewer { kind } }", variables: "{}", headers: `{"Authorization": "Bearer ${TOKEN}"}`, operationName: "" };
    s.setItem("graphiql:queries", JSON.stringify({ queries: [item] }));
    s.setItem("graphiql:favorites", JSON.stringify({ queries: [{ ...item, favorite: true }] }));
    s.setItem("graphiql:tabState", JSON.stringify({ tabs: [{ id: "a", headers: item.headers, query: item.query }], activeTabIndex: 0 }));
    s.setItem("graphiql:headers", item.headers);
    s.setItem("graphiql:query", "{ viewer { kind } }");
    s.setItem("graphiql:theme", "dark");

    const all = Object.keys(localStorage).map((k) => k + "=" + localStorage.getItem(k)).join("\n");
    expect(all).not.toContain(TOKEN);
    expect(localStorage.getItem("graphiql:headers")).toBeNull();
    // The rest is kept as GraphiQL wrote it.
    expect(JSON.parse(s.getItem("graphiql:queries")!)).toEqual({ queries: [{ query: item.query, variables: "{}", operationName: "" }] });
    expect(s.getItem("graphiql:query")).toBe("{ viewer { kind } }");
    expect(s.getItem("graphiql:theme")).toBe("dark");
  });

  it("leaves values that are not JSON structures as they are", () => {
    expect(withoutHeaders("{ viewer { kind } }")).toBe("{ viewer { kind } }");
    expect(withoutHeaders("true")).toBe("true");
    expect(withoutHeaders('"headers"')).toBe('"headers"');
  });

  it("clears GraphiQL's keys only", () => {
    localStorage.setItem("other", "kept");
    const s = headerlessStorage(localStorage);
    s.setItem("graphiql:query", "{ a }");
    s.setItem("graphiql:theme", "light");
    s.clear();
    expect(Object.keys(localStorage)).toEqual(["other"]);
  });
});
