// The repository list's filters and order live in the URL query string, so
// a filtered, sorted list can be shared. These functions convert between the
// query string and the GraphQL variables, dropping anything invalid.
import type {
  Format,
  OrderDirection,
  RepositoryFilter,
  RepositoryKind,
  RepositoryOrder,
  RepositoryOrderField,
  Visibility,
} from "./gql/graphql";

export const FORMATS: readonly Format[] = ["DOCKER", "OCI", "MAVEN", "NPM"];
export const KINDS: readonly RepositoryKind[] = ["HOSTED", "REMOTE", "VIRTUAL"];
export const VISIBILITIES: readonly Visibility[] = ["PRIVATE", "INTERNAL", "PUBLIC"];
export const ORDER_FIELDS: readonly RepositoryOrderField[] = ["NAME", "LAST_UPDATED", "SIZE", "DOWNLOADS", "ARTIFACTS"];

export const ORDER_LABELS: Record<RepositoryOrderField, string> = {
  NAME: "Name",
  LAST_UPDATED: "Last updated",
  SIZE: "Size",
  DOWNLOADS: "Downloads",
  ARTIFACTS: "Artifacts",
};

/** Name sorts A→Z by default; the numbers and dates biggest/newest first. */
export function defaultDirection(field: RepositoryOrderField): OrderDirection {
  return field === "NAME" ? "ASC" : "DESC";
}

export const DEFAULT_ORDER: RepositoryOrder = { field: "NAME", direction: "ASC" };

export interface RepoListState {
  filter: RepositoryFilter;
  orderBy: RepositoryOrder;
}

function pick<T extends string>(value: string | null, allowed: readonly T[]): T | undefined {
  if (value == null) return undefined;
  const v = value.toUpperCase() as T;
  return allowed.includes(v) ? v : undefined;
}

export function parseRepoListParams(params: URLSearchParams): RepoListState {
  const filter: RepositoryFilter = {};
  const format = pick(params.get("format"), FORMATS);
  if (format) filter.format = format;
  const kind = pick(params.get("kind"), KINDS);
  if (kind) filter.kind = kind;
  const visibility = pick(params.get("visibility"), VISIBILITIES);
  if (visibility) filter.visibility = visibility;
  const collection = params.get("collection")?.trim();
  if (collection) filter.collection = collection;

  const field = pick(params.get("sort"), ORDER_FIELDS) ?? DEFAULT_ORDER.field;
  const direction = pick<OrderDirection>(params.get("dir"), ["ASC", "DESC"]) ?? defaultDirection(field);
  return { filter, orderBy: { field, direction } };
}

/**
 * The canonical query string of a state: defaults are left out, keys come in
 * a fixed order, so equal states give equal URLs (and cache keys).
 */
export function repoListSearch(state: RepoListState): string {
  const p = new URLSearchParams();
  const { filter, orderBy } = state;
  if (filter.format) p.set("format", filter.format.toLowerCase());
  if (filter.kind) p.set("kind", filter.kind.toLowerCase());
  if (filter.visibility) p.set("visibility", filter.visibility.toLowerCase());
  if (filter.collection) p.set("collection", filter.collection);
  if (orderBy.field !== DEFAULT_ORDER.field || orderBy.direction !== defaultDirection(orderBy.field)) {
    p.set("sort", orderBy.field.toLowerCase());
    if (orderBy.direction !== defaultDirection(orderBy.field)) p.set("dir", orderBy.direction.toLowerCase());
  }
  return p.toString();
}

/** Variables for the filter argument: null when nothing filters. */
export function filterVariable(filter: RepositoryFilter): RepositoryFilter | null {
  const out: RepositoryFilter = {};
  let any = false;
  for (const k of ["format", "kind", "visibility", "collection"] as const) {
    if (filter[k]) {
      (out as Record<string, unknown>)[k] = filter[k];
      any = true;
    }
  }
  return any ? out : null;
}

export function isFiltered(filter: RepositoryFilter): boolean {
  return filterVariable(filter) !== null;
}
