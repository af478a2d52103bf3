import { describe, expect, it } from "vitest";
import { initialPages, pagesReducer } from "./pagination";

describe("keyset pages", () => {
  it("appends the end cursor of the last page", () => {
    let s = initialPages("k");
    s = pagesReducer(s, { type: "more", page: 0, endCursor: "c1" });
    s = pagesReducer(s, { type: "more", page: 1, endCursor: "c2" });
    expect(s.afters).toEqual([null, "c1", "c2"]);
  });

  it("ignores a second click and stale buttons of earlier pages", () => {
    let s = initialPages("k");
    s = pagesReducer(s, { type: "more", page: 0, endCursor: "c1" });
    const same = pagesReducer(s, { type: "more", page: 0, endCursor: "c1" });
    expect(same).toBe(s);
    const dup = pagesReducer(s, { type: "more", page: 1, endCursor: "c1" });
    expect(dup.afters).toEqual([null, "c1"]);
  });

  it("starts over when the filter or order changes", () => {
    let s = initialPages("a");
    s = pagesReducer(s, { type: "more", page: 0, endCursor: "c1" });
    s = pagesReducer(s, { type: "reset", key: "b" });
    expect(s).toEqual({ key: "b", afters: [null] });
    const again = pagesReducer(s, { type: "reset", key: "b" });
    expect(again).toBe(s);
  });
});
