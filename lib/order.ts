// Sorting names by UTF-16 code units, as Array.prototype.sort does by default. Not
// localeCompare: its first call pages in ICU's collation code and data (about 2 MB that stays
// resident; bench memory), and a server's listings need a stable order, not a reader's locale.

/** A comparator for `sort` ordering strings by code units. */
export const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
