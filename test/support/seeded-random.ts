/**
 * A repeatable random number source for race tests: the same seed gives the same sequence of
 * delays and choices on every run (how the requests then interleave still follows the machine's
 * timing).
 */

/** `random(n)`: an integer in [0, n), from a linear congruential sequence started at `seed`. */
export function seededRandom(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
}

/**
 * `uniform()`: a number in [0, 1) from a repeatable sequence started at `seed` (mulberry32: 32
 * bits of state, exact in doubles, fast enough for simulations of many thousands of draws).
 */
export function seededUniform(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
