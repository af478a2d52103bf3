import { Client, cacheExchange, fetchExchange } from "urql";

/**
 * A urql client for /graphql that sends the token as a Bearer header. It
 * uses POST (the default), and the document cache, which every mutation
 * invalidates for the typenames it returns.
 */
export function makeClient(token: string | null, url = "/graphql"): Client {
  return new Client({
    url,
    exchanges: [cacheExchange, fetchExchange],
    requestPolicy: "cache-and-network",
    fetchOptions: (): RequestInit => {
      const headers: Record<string, string> = {};
      if (token) headers.Authorization = `Bearer ${token}`;
      return { headers };
    },
  });
}
