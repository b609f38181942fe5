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
