import { useEffect, useMemo, useState } from "react";
import { GraphiQL } from "graphiql";
import type { SessionInfo } from "../session";
import { makeFetcher } from "./fetcher";
import { headerlessStorage } from "./storage";
import type { Sessions } from "./sessions";

export const DEFAULT_QUERY = `# The Artifact Registry management API. Docs (the book icon) lists every
# type and field. Signed in to the UI, queries run as you; otherwise add
# {"Authorization": "Bearer <token>"} under Headers below.
{
  viewer {
    kind
    name
  }
}
`;

/** Who the queries run as, for the header of the page. */
export function who(s: SessionInfo): string {
  if (!s.signedIn) return "Not signed in: sign in to the UI, or set an Authorization header under Headers";
  const name = s.kind === "ADMIN" ? "admin" : `${s.name ?? "token"}${s.namespace ? ` (${s.namespace})` : ""}`;
  return `Signed in as ${name}; an Authorization header under Headers takes precedence`;
}

export function Playground({ sessions, storage }: { sessions: Sessions; storage: Storage }) {
  const [session, setSession] = useState<SessionInfo | null>(null);
  useEffect(() => sessions.subscribe(setSession), [sessions]);
  const fetcher = useMemo(() => makeFetcher({ session: sessions.current, refresh: sessions.refresh }), [sessions]);
  const store = useMemo(() => headerlessStorage(storage), [storage]);
  if (!session) return null;
  return (
    <GraphiQL
      fetcher={fetcher}
      storage={store}
      defaultQuery={DEFAULT_QUERY}
      isHeadersEditorEnabled
      shouldPersistHeaders={false}
      showPersistHeadersSettings={false}
      // Where a token goes, open from the start when there is no session.
      defaultEditorToolsVisibility={session.signedIn ? false : "headers"}
    >
      <GraphiQL.Logo>
        <span className="pg-logo">
          <a href="/">Artifact Registry</a>
          <span className="pg-who" role="status">
            {who(session)}
          </span>
        </span>
      </GraphiQL.Logo>
    </GraphiQL>
  );
}
