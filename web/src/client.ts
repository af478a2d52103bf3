import { Client, cacheExchange, fetchExchange, type Exchange } from "urql";
import { CSRF_HEADER } from "./auth";
import { refetchInFlightExchange } from "./refetchInFlight";

/** The app's exchanges in front of the network; the tests' mock client uses them too. */
export const exchangesBeforeNetwork: Exchange[] = [cacheExchange, refetchInFlightExchange];

/**
 * A urql client for /graphql. The session cookie goes along by itself
 * (same origin); the CSRF token, kept in memory, proves the request comes
 * from this page. A 401 on a signed-in client means the session ended
 * (signed out elsewhere, expired, admin token changed): onEnded is called.
 * Queries go by GET when they fit in the URL (urql's default), mutations by
 * POST. The document cache refetches what a mutation invalidates, and a
 * query in flight when a mutation answers is sent again.
 */
export function makeClient(csrf: string | null, onEnded: () => void = () => {}, url = "/graphql"): Client {
  return new Client({
    url,
    exchanges: [...exchangesBeforeNetwork, fetchExchange],
    requestPolicy: "cache-and-network",
    fetchOptions: (): RequestInit => {
      const headers: Record<string, string> = {};
      if (csrf) headers[CSRF_HEADER] = csrf;
      return { headers, credentials: "same-origin" };
    },
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (csrf && res.status === 401) onEnded();
      return res;
    },
  });
}
