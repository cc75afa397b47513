export function canListen(port: number): Promise<boolean>;

/** A free loopback port in 15000-29999, not in `taken`, for which `alsoFree` holds too. */
export function freePort(taken?: ReadonlySet<number>, alsoFree?: (port: number) => Promise<boolean>): Promise<number>;
