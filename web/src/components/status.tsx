import type { NamespaceStatus, Visibility } from "../gql/graphql";
import { Badge } from "./ui";

const STATUS_TONE: Record<NamespaceStatus, string> = {
  ACTIVE: "ok",
  SUSPENDED: "warn",
  DISABLED: "warn",
  BLOCKED: "bad",
  DELETED: "bad",
  PURGED: "bad",
};

export function StatusBadge({ status }: { status: NamespaceStatus }) {
  return <Badge tone={STATUS_TONE[status]}>{status.toLowerCase()}</Badge>;
}

export function VisibilityBadge({ visibility }: { visibility: Visibility }) {
  return <Badge tone={visibility === "PUBLIC" ? "info" : undefined}>{visibility.toLowerCase()}</Badge>;
}
