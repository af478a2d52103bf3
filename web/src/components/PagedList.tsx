import { useCallback, useEffect, useReducer, type ReactNode } from "react";
import { initialPages, pagesReducer } from "../pagination";

export interface PageProps {
  /** Cursor of the previous page, null for the first page. */
  after: string | null;
  /** 0-based position of the page. */
  index: number;
  /** True for the page that shows the "Load more" button. */
  isLast: boolean;
  /** Ask for the next page after this one. */
  onMore(endCursor: string): void;
}

/**
 * Renders pages of a keyset-paginated connection, one component per page
 * (each runs its own query with `after`). `resetKey` identifies the filter
 * and order: when it changes the list starts over.
 */
export function PagedList({ resetKey, page }: { resetKey: string; page: (p: PageProps) => ReactNode }) {
  const [state, dispatch] = useReducer(pagesReducer, resetKey, initialPages);
  useEffect(() => {
    dispatch({ type: "reset", key: resetKey });
  }, [resetKey]);
  const afters = state.key === resetKey ? state.afters : [null];
  const more = useCallback((index: number, endCursor: string) => dispatch({ type: "more", page: index, endCursor }), []);
  return (
    <>
      {afters.map((after, index) =>
        page({
          after,
          index,
          isLast: index === afters.length - 1,
          onMore: (c) => more(index, c),
        }),
      )}
    </>
  );
}

export interface LoadMoreProps {
  pageInfo: { hasNextPage: boolean; endCursor?: string | null };
  onMore(endCursor: string): void;
  shown?: number;
  total?: number;
}

/** Whether LoadMore renders anything: a next page, or a total to report. */
export function loadMoreShows({ pageInfo, shown, total }: LoadMoreProps): boolean {
  return (pageInfo.hasNextPage && !!pageInfo.endCursor) || (total != null && shown != null && total > 0);
}

export function LoadMore({ pageInfo, onMore, shown, total }: LoadMoreProps) {
  if (!pageInfo.hasNextPage || !pageInfo.endCursor) {
    return total != null && shown != null && total > 0 ? (
      <p className="list-end muted">All {total.toLocaleString("en-US")} shown.</p>
    ) : null;
  }
  const cursor = pageInfo.endCursor;
  return (
    <div className="load-more">
      <button type="button" className="btn" onClick={() => onMore(cursor)}>
        Load more
      </button>
      {total != null && shown != null && (
        <span className="muted">
          {shown.toLocaleString("en-US")} of {total.toLocaleString("en-US")} shown
        </span>
      )}
    </div>
  );
}

/** Focus the first link of a newly loaded page when focus was lost (the clicked button went away). */
export function focusFirstLinkIfLost(container: HTMLElement | null) {
  if (!container) return;
  const active = document.activeElement;
  if (active && active !== document.body) return;
  const link = container.querySelector<HTMLElement>("a[href], button");
  link?.focus();
}

/**
 * LoadMore as the last row of a table page. A list's last page without a
 * total has nothing to show there: no row then, rather than an empty one.
 */
export function LoadMoreRow({ colSpan, ...props }: LoadMoreProps & { colSpan: number }) {
  if (!loadMoreShows(props)) return null;
  return (
    <tr className="row-note row-more">
      <td colSpan={colSpan}>
        <LoadMore {...props} />
      </td>
    </tr>
  );
}
