// Keyset "load more": the list is a sequence of pages, each fetched with the
// endCursor of the page before it (never an offset). The state is the list
// of `after` cursors of the pages shown; a change of filter or order (the
// reset key) starts over from the first page.

export interface PagesState {
  key: string;
  afters: (string | null)[];
}

export type PagesAction =
  | { type: "reset"; key: string }
  /** Page `page` (0-based) said hasNextPage with this endCursor. */
  | { type: "more"; page: number; endCursor: string };

export function initialPages(key: string): PagesState {
  return { key, afters: [null] };
}

export function pagesReducer(state: PagesState, action: PagesAction): PagesState {
  switch (action.type) {
    case "reset":
      return state.key === action.key && state.afters.length === 1 ? state : initialPages(action.key);
    case "more":
      // Only the last page can ask for the next one, once: a double click or
      // a stale button of an earlier page must not fetch a page twice.
      if (action.page !== state.afters.length - 1) return state;
      if (state.afters.includes(action.endCursor)) return state;
      return { ...state, afters: [...state.afters, action.endCursor] };
  }
}
