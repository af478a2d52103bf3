import { describe, expect, it } from "vitest";
import { filterVariable, isFiltered, parseRepoListParams, repoListSearch } from "./repoQuery";

const parse = (s: string) => parseRepoListParams(new URLSearchParams(s));

describe("repository list URL state", () => {
  it("defaults to name ascending without filters", () => {
    expect(parse("")).toEqual({ filter: {}, orderBy: { field: "NAME", direction: "ASC" } });
    expect(repoListSearch(parse(""))).toBe("");
  });

  it("reads filters and order case-insensitively", () => {
    expect(parse("format=npm&kind=HOSTED&visibility=Public&collection=team-a&sort=size&dir=asc")).toEqual({
      filter: { format: "NPM", kind: "HOSTED", visibility: "PUBLIC", collection: "team-a" },
      orderBy: { field: "SIZE", direction: "ASC" },
    });
  });

  it("drops values the API does not know", () => {
    expect(parse("format=rpm&kind=x&visibility=&sort=stars&dir=up&collection=%20")).toEqual({
      filter: {},
      orderBy: { field: "NAME", direction: "ASC" },
    });
  });

  it("sorts numbers and dates biggest/newest first by default", () => {
    for (const f of ["size", "downloads", "artifacts", "last_updated"]) {
      expect(parse(`sort=${f}`).orderBy.direction).toBe("DESC");
    }
  });

  it("writes a canonical query string that round-trips", () => {
    const cases = [
      "format=docker",
      "sort=size",
      "sort=size&dir=asc",
      "sort=name&dir=desc",
      "format=maven&kind=hosted&visibility=private&collection=default&sort=downloads",
    ];
    for (const c of cases) {
      expect(repoListSearch(parse(c))).toBe(c);
    }
    // Defaults are not written out; key order is fixed.
    expect(repoListSearch(parse("dir=asc&sort=name"))).toBe("");
    expect(repoListSearch(parse("sort=last_updated&format=oci"))).toBe("format=oci&sort=last_updated");
  });

  it("sends null for no filter and only the set fields otherwise", () => {
    expect(filterVariable({})).toBeNull();
    expect(isFiltered({})).toBe(false);
    expect(filterVariable({ format: "OCI", collection: undefined })).toEqual({ format: "OCI" });
    expect(isFiltered({ visibility: "PUBLIC" })).toBe(true);
  });
});
