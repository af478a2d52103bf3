import { useEffect, useRef, useState, type ReactNode } from "react";
import type { CombinedError } from "urql";
import { Link } from "react-router";
import { describeError } from "../errors";
import { paths } from "../paths";
import { useLocation } from "react-router";

/** An error of a query or mutation, with each code's meaning. */
export function ErrorBox({ error, title }: { error: CombinedError; title?: string }) {
  const items = describeError(error);
  const location = useLocation();
  const unauth = items.some((i) => i.code === "UNAUTHENTICATED");
  return (
    <div className="error" role="alert">
      {title && <strong className="error-title">{title}</strong>}
      <ul>
        {items.map((e, i) => (
          <li key={i} data-code={e.code}>
            <span className="error-code">{e.title}</span> <code className="code-tag">{e.code}</code>
            {e.reason && <code className="code-tag">{e.reason.toLowerCase()}</code>}
            <div className="error-message">{e.message}</div>
            <div className="error-hint">{e.hint}</div>
          </li>
        ))}
      </ul>
      {unauth && location.pathname !== "/sign-in" && (
        <p>
          <Link to={paths.signIn(location.pathname + location.search)}>Sign in</Link>
        </p>
      )}
    </div>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="empty">{children}</div>;
}

export function Badge({ children, tone }: { children: ReactNode; tone?: string }) {
  return <span className={`badge${tone ? ` badge-${tone}` : ""}`}>{children}</span>;
}

async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection-based copy
  }
  const ta = document.createElement("textarea");
  ta.value = text;
  ta.setAttribute("readonly", "");
  ta.style.position = "fixed";
  ta.style.opacity = "0";
  document.body.appendChild(ta);
  ta.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  document.body.removeChild(ta);
  return ok;
}

function useCopy() {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(timer.current), []);
  const copy = async (text: string) => {
    const ok = await copyText(text);
    setState(ok ? "copied" : "failed");
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(() => setState("idle"), 2000);
  };
  return [state, copy] as const;
}

/** A button that copies `text`; `label` names what is copied. */
export function CopyButton({ label, text, children }: { label: string; text: string; children?: ReactNode }) {
  const [state, copy] = useCopy();
  return (
    <>
      <button type="button" className="btn btn-small" onClick={() => void copy(text)} aria-label={`Copy ${label}`} title={text}>
        {state === "copied" ? "Copied" : state === "failed" ? "Copy failed" : (children ?? "Copy")}
      </button>
      <span className="visually-hidden" role="status" aria-live="polite">
        {state === "copied" ? `${label} copied` : state === "failed" ? "Copy failed: select the text and copy it" : ""}
      </span>
    </>
  );
}

/** A command or snippet with a copy button. */
export function CopyBlock({ label, text, multiline }: { label: string; text: string; multiline?: boolean }) {
  return (
    <div className="copy-block">
      <div className="copy-head">
        <span className="copy-label">{label}</span>
        <CopyButton label={label} text={text} />
      </div>
      {multiline ? (
        <pre className="copy-text" tabIndex={0}>
          {text}
        </pre>
      ) : (
        <code className="copy-text" tabIndex={0}>
          {text}
        </code>
      )}
    </div>
  );
}

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  return (
    <div className="page-title">
      <h1 tabIndex={-1} id="page-heading">
        {children}
      </h1>
      {actions && <div className="page-actions">{actions}</div>}
    </div>
  );
}

export function Dl({ items }: { items: [string, ReactNode][] }) {
  return (
    <dl className="facts">
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}
