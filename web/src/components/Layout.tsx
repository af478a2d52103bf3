import { useEffect, useRef, useState, type FormEvent } from "react";
import { Link, NavLink, Outlet, useLocation, useNavigate, useParams } from "react-router";
import { useAuth } from "../auth";
import { graphql } from "../gql";
import { paths } from "../paths";

export const ViewerQuery = graphql(`
  query Viewer {
    viewer {
      kind
      name
      namespace {
        id
        slug
      }
      scopes
    }
  }
`);

/** Who the session is (admin, or a namespace token's name). */
function Who() {
  const { session } = useAuth();
  const title = session.namespace
    ? `Signed in with a token of namespace ${session.namespace}`
    : "Signed in with the admin token";
  return (
    <span className="who" title={title}>
      Signed in as {session.name}
    </span>
  );
}

/**
 * Moves focus to the page heading after client-side navigation, so screen
 * reader and keyboard users start at the new content (not on the first load).
 */
function useFocusHeadingOnNavigate() {
  const location = useLocation();
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    const id = window.setTimeout(() => {
      const active = document.activeElement;
      // Keep focus inside forms and filters that changed the URL themselves.
      if (active && active !== document.body && active.closest("form, .filters, .tabs, dialog")) return;
      document.getElementById("page-heading")?.focus({ preventScroll: false });
    }, 0);
    return () => window.clearTimeout(id);
  }, [location.pathname]);
}

/** "/" focuses the page's search or filter field, like many web apps do. */
function useSlashShortcut() {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target as HTMLElement | null;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      const field = document.querySelector<HTMLElement>("[data-shortcut='/']");
      if (field) {
        e.preventDefault();
        field.focus();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
}

export function Layout() {
  const { signedIn, signOut } = useAuth();
  const navigate = useNavigate();
  const location = useLocation();
  useFocusHeadingOnNavigate();
  useSlashShortcut();
  return (
    <div className="app">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to={paths.home()} className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Artifact Registry
        </Link>
        <NamespaceJump />
        <div className="topbar-right">
          {signedIn ? (
            <>
              <Who />
              <button
                type="button"
                className="btn btn-ghost"
                onClick={async () => {
                  await signOut();
                  navigate(paths.home());
                }}
              >
                Sign out
              </button>
            </>
          ) : (
            location.pathname !== "/sign-in" && (
              <Link className="btn btn-primary" to={paths.signIn(location.pathname + location.search)}>
                Sign in
              </Link>
            )
          )}
        </div>
      </header>
      <main id="main" className="main">
        <Outlet />
      </main>
    </div>
  );
}

/** Open a namespace by slug from anywhere. */
function NamespaceJump() {
  const { ns } = useParams();
  const [value, setValue] = useState(ns ?? "");
  const navigate = useNavigate();
  useEffect(() => setValue(ns ?? ""), [ns]);
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const slug = value.trim().toLowerCase();
    if (slug) navigate(paths.namespace(slug));
  };
  return (
    <form className="ns-jump" onSubmit={onSubmit} role="search" aria-label="Open a namespace">
      <label htmlFor="ns-jump" className="visually-hidden">
        Namespace
      </label>
      <input
        id="ns-jump"
        placeholder="namespace"
        value={value}
        onChange={(e) => setValue(e.target.value)}
        autoComplete="off"
        spellCheck={false}
      />
      <button type="submit" className="btn btn-small">
        Open
      </button>
    </form>
  );
}

export function NamespaceLayout() {
  const { ns = "" } = useParams();
  const { pathname } = useLocation();
  const inRepo = pathname.startsWith(`${paths.namespace(ns)}/r/`);
  const tabs: [string, string, boolean][] = [
    ["Overview", paths.namespace(ns), true],
    ["Repositories", paths.repositories(ns), false],
    ["Trash", paths.trash(ns), false],
    ["Lifecycle", paths.lifecycle(ns), false],
    ["Publish history", paths.history(ns), false],
    ["Checksum search", paths.search(ns), false],
    ["Access tokens", paths.tokens(ns), false],
    ["Garbage collection", paths.gc(ns), false],
  ];
  return (
    <>
      <nav className="tabs" aria-label={`Namespace ${ns}`}>
        <span className="tabs-ns" title="Namespace">
          {ns}
        </span>
        <ul>
          {tabs.map(([label, to, end]) => (
            <li key={label}>
              <NavLink
                to={to}
                end={end}
                className={({ isActive }) => (isActive || (inRepo && label === "Repositories") ? "active" : undefined)}
                aria-current={inRepo && label === "Repositories" ? "page" : undefined}
              >
                {label}
              </NavLink>
            </li>
          ))}
        </ul>
      </nav>
      <Outlet />
    </>
  );
}
