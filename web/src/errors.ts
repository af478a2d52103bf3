// Mapping of the API's error codes (extensions.code, see schema.graphqls)
// to what they mean for the person looking at the screen.
import type { CombinedError } from "urql";

export type ErrorCode =
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "INVALID_INPUT"
  | "FORBIDDEN"
  | "UNAUTHENTICATED"
  | "CONFLICT"
  | "NAMESPACE_UNAVAILABLE"
  | "INTERNAL"
  | "DEPTH_LIMIT_EXCEEDED"
  | "COMPLEXITY_LIMIT_EXCEEDED"
  | "NETWORK"
  | "UNKNOWN";

export interface ErrorMeaning {
  title: string;
  hint: string;
}

export const MEANINGS: Record<ErrorCode, ErrorMeaning> = {
  NOT_FOUND: {
    title: "Not found",
    hint: "It does not exist, was moved to the trash, or you may not see it.",
  },
  ALREADY_EXISTS: {
    title: "Already exists",
    hint: "The name is taken (names stay reserved while an item is in the trash). Choose another name.",
  },
  INVALID_INPUT: {
    title: "Invalid input",
    hint: "Check the highlighted values against the rules shown next to them.",
  },
  FORBIDDEN: {
    title: "Not allowed",
    hint: "Your token is valid but does not permit this action.",
  },
  UNAUTHENTICATED: {
    title: "Sign-in required",
    hint: "Sign in with a token that may see this, or your token is no longer valid.",
  },
  CONFLICT: {
    title: "Conflict",
    hint: "The current state does not allow this (something depends on it, or a concurrent change is in progress). Reload and try again.",
  },
  NAMESPACE_UNAVAILABLE: {
    title: "Namespace unavailable",
    hint: "The namespace is blocked or disabled, or suspended so that it refuses changes; an administrator can lift the condition.",
  },
  INTERNAL: {
    title: "Server error",
    hint: "The server failed; the details are in its log. Try again later.",
  },
  DEPTH_LIMIT_EXCEEDED: {
    title: "Query too deep",
    hint: "The request nests too many levels; this is a bug in the page.",
  },
  COMPLEXITY_LIMIT_EXCEEDED: {
    title: "Query too large",
    hint: "The request asks for too many objects at once; load fewer rows.",
  },
  NETWORK: {
    title: "Server unreachable",
    hint: "The registry did not answer. Check your connection and that the server is running.",
  },
  UNKNOWN: {
    title: "Error",
    hint: "The server reported an error without a known code.",
  },
};

export interface DescribedError extends ErrorMeaning {
  code: ErrorCode;
  message: string;
  /** Field path of a GraphQL error, e.g. "namespace.repositories". */
  path?: string;
  /** extensions.reason of NAMESPACE_UNAVAILABLE: which condition holds. */
  reason?: string;
}

function knownCode(code: unknown): ErrorCode {
  if (typeof code === "string" && code in MEANINGS) return code as ErrorCode;
  return "UNKNOWN";
}

/** One entry per distinct (code, message) of a CombinedError. */
export function describeError(err: CombinedError): DescribedError[] {
  const out: DescribedError[] = [];
  const seen = new Set<string>();
  const push = (d: DescribedError) => {
    const key = d.code + "\u0000" + d.message;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(d);
  };
  for (const ge of err.graphQLErrors ?? []) {
    const raw = ge.extensions?.code;
    const code = knownCode(raw);
    const meaning = MEANINGS[code];
    push({
      code,
      ...meaning,
      message: ge.message,
      path: ge.path && ge.path.length ? ge.path.join(".") : undefined,
      reason: typeof ge.extensions?.reason === "string" ? ge.extensions.reason : undefined,
    });
  }
  if (err.networkError) {
    push({ code: "NETWORK", ...MEANINGS.NETWORK, message: err.networkError.message });
  }
  if (out.length === 0) {
    push({ code: "UNKNOWN", ...MEANINGS.UNKNOWN, message: err.message });
  }
  return out;
}

/** The first code of an error, for screens that react to one (sign-in). */
export function errorCode(err: CombinedError | undefined): ErrorCode | undefined {
  if (!err) return undefined;
  return describeError(err)[0]?.code;
}

/** True when any error says the caller must (re-)authenticate. */
export function isUnauthenticated(err: CombinedError | undefined): boolean {
  return !!err && describeError(err).some((d) => d.code === "UNAUTHENTICATED");
}
