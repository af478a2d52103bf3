import { fetchSession, type SessionInfo } from "../session";

/** The session as the playground knows it, shared by the page and its fetcher. */
export interface Sessions {
  current(): Promise<SessionInfo>;
  /** Asks the server again and tells the subscribers. */
  refresh(): Promise<SessionInfo>;
  subscribe(fn: (s: SessionInfo) => void): () => void;
}

export function sessions(ask: () => Promise<SessionInfo> = fetchSession): Sessions {
  const subs = new Set<(s: SessionInfo) => void>();
  const track = (p: Promise<SessionInfo>) => {
    void p.then((s) => subs.forEach((fn) => fn(s)));
    return p;
  };
  let current = track(ask());
  return {
    current: () => current,
    refresh: () => (current = track(ask())),
    subscribe(fn) {
      subs.add(fn);
      void current.then((s) => subs.has(fn) && fn(s));
      return () => subs.delete(fn);
    },
  };
}
