import { describe, expect, it, vi } from "vitest";
import { parse } from "graphql";
import { Client, cacheExchange, fetchExchange, type Exchange, type OperationResult } from "urql";
import { pipe, subscribe } from "wonka";
import { refetchInFlightExchange } from "./refetchInFlight";

// Not in the app's schema: parsed here, not tagged for the code generator.
const ListQuery = parse("query List { items { id } }");
const RemoveMutation = parse("mutation Remove { remove { id } }");

/**
 * A server whose answers are read when a request arrives and sent when the
 * test releases them, like a list read just before a mutation commits and
 * answered after the mutation's own answer.
 */
function server() {
  let items = ["a", "b"];
  const held: (() => void)[] = [];
  const requests: string[] = [];
  const fetch = async (url: RequestInfo | URL, init?: RequestInit) => {
    const query = init?.body
      ? (JSON.parse(String(init.body)) as { query: string }).query
      : (new URL(String(url), "http://localhost").searchParams.get("query") ?? "");
    const mutation = query.trimStart().startsWith("mutation");
    requests.push(mutation ? "mutation" : "query");
    if (mutation) items = items.slice(1);
    const data = mutation
      ? { remove: { __typename: "Item", id: "a" } }
      : { items: items.map((id) => ({ __typename: "Item", id })) };
    const answer = new Response(JSON.stringify({ data }), { headers: { "content-type": "application/json" } });
    if (mutation) return answer;
    return new Promise<Response>((resolve) => held.push(() => resolve(answer)));
  };
  const release = () => held.splice(0).forEach((r) => r());
  return { fetch, release, held, requests };
}

async function listAfterRemove(exchanges: Exchange[]) {
  const s = server();
  const client = new Client({ url: "/graphql", exchanges, fetch: s.fetch, requestPolicy: "cache-and-network" });
  const seen: OperationResult[] = [];
  const { unsubscribe } = pipe(
    client.query(ListQuery, {}),
    subscribe((r) => seen.push(r)),
  );
  await vi.waitFor(() => expect(s.held).toHaveLength(1));
  // The list was read with both items; the removal commits and answers
  // before the list's answer arrives.
  await client.mutation(RemoveMutation, {}).toPromise();
  while (seen.length === 0) {
    s.release();
    await vi.waitFor(() => expect(seen.length + s.held.length).toBeGreaterThan(0));
  }
  unsubscribe();
  return { lists: seen.map((r) => (r.data as { items: { id: string }[] }).items.map((i) => i.id)), requests: s.requests };
}

describe("refetchInFlightExchange", () => {
  it("replaces an answer read before a mutation with a fresh one", async () => {
    const { lists, requests } = await listAfterRemove([cacheExchange, refetchInFlightExchange, fetchExchange]);
    expect(lists).toEqual([["b"]]);
    expect(requests).toEqual(["query", "mutation", "query"]);
  });

  it("is needed: without it the stale list stays", async () => {
    const { lists, requests } = await listAfterRemove([cacheExchange, fetchExchange]);
    expect(lists).toEqual([["a", "b"]]);
    expect(requests).toEqual(["query", "mutation"]);
  });
});
