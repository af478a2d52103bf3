import type { Exchange, Operation } from "urql";
import { filter, makeSubject, merge, pipe, tap } from "wonka";

/**
 * Sends a query again when a mutation finished while the query was in
 * flight, and drops the query's first answer.
 *
 * That answer may have been read before the mutation committed, or partly
 * before and partly after (a page and its total count are read by separate
 * statements). The document cache cannot fix it: it refetches what the
 * mutation invalidates, but the client drops a refetch of a query that is
 * still in flight, so the old answer would stay on screen (a manifest moved
 * to the trash still listed, under a count that no longer includes it).
 *
 * It sits between the cache and the fetch exchange, so the client sees only
 * the fresh answer.
 */
export const refetchInFlightExchange: Exchange =
  ({ forward }) =>
  (ops$) => {
    const inFlight = new Map<number, Operation>();
    const superseded = new Set<number>();
    const again = makeSubject<Operation>();
    const sent$ = pipe(
      merge([ops$, again.source]),
      tap((op) => {
        if (op.kind === "query") inFlight.set(op.key, op);
        if (op.kind === "teardown") {
          inFlight.delete(op.key);
          superseded.delete(op.key);
        }
      }),
    );
    return pipe(
      forward(sent$),
      filter(({ operation: { kind, key } }) => {
        if (kind === "mutation") {
          for (const k of inFlight.keys()) superseded.add(k);
          return true;
        }
        if (kind !== "query") return true;
        const op = inFlight.get(key);
        if (superseded.delete(key) && op) {
          again.next(op);
          return false;
        }
        inFlight.delete(key);
        return true;
      }),
    );
  };
