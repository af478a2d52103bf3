// Small display helpers shared by the screens.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

export function formatBytes(n: number | null | undefined): string {
  if (n == null || !Number.isFinite(n)) return "–";
  if (n < 1024) return `${n} B`;
  let v = n;
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${UNITS[i]}`;
}

export function formatCount(n: number | null | undefined): string {
  if (n == null) return "–";
  return n.toLocaleString("en-US");
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/:\d\dZ$/, " UTC");
}

export function formatAge(seconds: number): string {
  if (seconds <= 0) return "none";
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} days`;
}

export function shortDigest(d: string): string {
  const [alg, hex] = d.includes(":") ? d.split(":", 2) : ["sha256", d];
  return `${alg}:${hex.slice(0, 12)}`;
}

/** The host (and port) clients use to reach this registry. */
export function registryHost(): string {
  return window.location.host;
}
