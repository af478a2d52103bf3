import { CombinedError } from "urql";
import { GraphQLError } from "graphql";
import { describe, expect, it } from "vitest";
import { describeError, errorCode, isUnauthenticated, MEANINGS } from "./errors";

const gqlErr = (message: string, code?: unknown, path?: string[]) =>
  new GraphQLError(message, { path, extensions: code === undefined ? {} : { code } });

describe("describeError", () => {
  it("maps every API code to its meaning and keeps the server's message", () => {
    for (const code of ["NOT_FOUND", "ALREADY_EXISTS", "INVALID_INPUT", "FORBIDDEN", "UNAUTHENTICATED", "CONFLICT", "INTERNAL"] as const) {
      const err = new CombinedError({ graphQLErrors: [gqlErr(`server says ${code}`, code, ["namespace", "repositories"])] });
      const [d] = describeError(err);
      expect(d.code).toBe(code);
      expect(d.title).toBe(MEANINGS[code].title);
      expect(d.hint).toBe(MEANINGS[code].hint);
      expect(d.message).toBe(`server says ${code}`);
      expect(d.path).toBe("namespace.repositories");
    }
  });

  it("says which condition makes a namespace unavailable", () => {
    const err = new CombinedError({
      graphQLErrors: [new GraphQLError("namespace acme is suspended", { extensions: { code: "NAMESPACE_UNAVAILABLE", reason: "SUSPENDED" } })],
    });
    const [d] = describeError(err);
    expect(d.code).toBe("NAMESPACE_UNAVAILABLE");
    expect(d.title).toBe("Namespace unavailable");
    expect(d.reason).toBe("SUSPENDED");
  });

  it("maps gqlgen's own limit codes", () => {
    const err = new CombinedError({ graphQLErrors: [gqlErr("too complex", "COMPLEXITY_LIMIT_EXCEEDED")] });
    expect(describeError(err)[0].title).toBe("Query too large");
  });

  it("treats missing or unknown codes as UNKNOWN, without inventing a meaning", () => {
    const err = new CombinedError({ graphQLErrors: [gqlErr("odd", "SOMETHING_NEW"), gqlErr("plain")] });
    const ds = describeError(err);
    expect(ds.map((d) => d.code)).toEqual(["UNKNOWN", "UNKNOWN"]);
    expect(ds.map((d) => d.message)).toEqual(["odd", "plain"]);
  });

  it("reports network errors as NETWORK", () => {
    const err = new CombinedError({ networkError: new Error("Failed to fetch") });
    const [d] = describeError(err);
    expect(d.code).toBe("NETWORK");
    expect(d.message).toBe("Failed to fetch");
  });

  it("collapses identical errors (one per list item) into one entry", () => {
    const err = new CombinedError({
      graphQLErrors: [
        gqlErr("authentication required", "UNAUTHENTICATED", ["a"]),
        gqlErr("authentication required", "UNAUTHENTICATED", ["b"]),
        gqlErr("nope", "FORBIDDEN"),
      ],
    });
    expect(describeError(err).map((d) => d.code)).toEqual(["UNAUTHENTICATED", "FORBIDDEN"]);
  });

  it("answers the helpers", () => {
    const unauth = new CombinedError({ graphQLErrors: [gqlErr("x", "CONFLICT"), gqlErr("y", "UNAUTHENTICATED")] });
    expect(errorCode(unauth)).toBe("CONFLICT");
    expect(isUnauthenticated(unauth)).toBe(true);
    expect(isUnauthenticated(undefined)).toBe(false);
    expect(errorCode(undefined)).toBeUndefined();
  });
});
