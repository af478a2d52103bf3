// A real urql Client whose exchange answers from a function instead of the
// network, recording every operation it sees.
import { Client, makeResult, makeErrorResult, type Exchange, type Operation, type OperationResult } from "urql";
import { filter, map, mergeMap, pipe, fromValue, delay } from "wonka";
import { GraphQLError } from "graphql";
import { exchangesBeforeNetwork } from "../client";

export type Responder = (
  op: Operation,
) => { data?: unknown; errors?: { message: string; code?: string; path?: (string | number)[] }[] } | Error;

export function mockClient(respond: Responder, opts: { delayMs?: number } = {}) {
  // Operations answered (not torn down before their answer arrived, which
  // urql does to the one it starts while rendering, like an aborted fetch).
  const operations: Operation[] = [];
  const pending = new Map<number, number>();
  const exchange: Exchange = () => (ops$) =>
    pipe(
      ops$,
      filter((op) => {
        if (op.kind === "teardown") pending.delete(op.key);
        return op.kind === "query" || op.kind === "mutation";
      }),
      mergeMap((op) => {
        const seq = (pending.get(op.key) ?? 0) + 1;
        pending.set(op.key, seq);
        const r = respond(op);
        let result: OperationResult;
        if (r instanceof Error) {
          result = makeErrorResult(op, r);
        } else {
          result = makeResult(op, {
            data: r.data ?? null,
            errors: r.errors?.map((e) => new GraphQLError(e.message, { path: e.path, extensions: e.code ? { code: e.code } : {} })),
          });
        }
        const one = fromValue(result);
        // Answers arrive asynchronously, as from a network.
        return pipe(
          one,
          delay(opts.delayMs ?? 1),
          filter(() => pending.get(op.key) === seq),
          map((x) => {
            pending.delete(op.key);
            operations.push(op);
            return x;
          }),
        );
      }),
    );
  // The app's exchanges in front of the fake network.
  const client = new Client({ url: "/graphql", exchanges: [...exchangesBeforeNetwork, exchange], requestPolicy: "cache-and-network" });
  return { client, operations };
}

export function opName(op: Operation): string | undefined {
  for (const d of op.query.definitions) {
    if (d.kind === "OperationDefinition") return d.name?.value;
  }
  return undefined;
}
