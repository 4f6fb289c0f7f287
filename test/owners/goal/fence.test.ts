/**
 * The delivery fence's encoding (owners/goal/fence.ts): one integer that orders a Goal's lifetimes
 * first and, within a lifetime, the installations its work store was written through — so a
 * receiver comparing bare integers refuses both an older lifetime and a superseded installation.
 * The vectors are the wire values a receiver sees in `X-Loopx-Fence`.
 */
import { describe, expect, it } from 'vitest';
import { deliveryFence, fenceGeneration, lifetimeFence } from '../../../src/owners/goal/index.js';

describe('the delivery fence', () => {
  it('has fixed wire values', () => {
    expect(deliveryFence({ generation: 1 })).toBe(1);
    expect(deliveryFence({ generation: 1 }, 1)).toBe(2);
    expect(deliveryFence({ generation: 1 }, 41)).toBe(42);
    expect(deliveryFence({ generation: 2 })).toBe(4_294_967_297);
    expect(deliveryFence({ generation: 3 }, 5)).toBe(8_589_934_598);
    expect(lifetimeFence({ generation: 2 })).toBe(deliveryFence({ generation: 2 }, 0));
  });

  it('orders lifetimes before installations: any fence of a later lifetime is above every fence of an earlier one', () => {
    const pairs: [number, number][] = [
      [1, 0],
      [1, 1],
      [1, 2 ** 32 - 2],
      [2, 0],
      [2, 7],
      [3, 0],
    ];
    const fences = pairs.map(([g, r]) => deliveryFence({ generation: g }, r));
    expect([...fences].sort((a, b) => a - b)).toEqual(fences);
    expect(new Set(fences).size).toBe(fences.length);
    for (const [i, [g]] of pairs.entries()) expect(fenceGeneration(fences[i]!)).toBe(g);
    expect(fenceGeneration(0)).toBe(0);
  });

  it('refuses what it cannot encode as a safe integer', () => {
    for (const [g, r] of [
      [0, 0],
      [1, -1],
      [1, 2 ** 32 - 1],
      [1.5, 0],
      [2 ** 21 + 1, 0],
    ] as const)
      expect(() => deliveryFence({ generation: g }, r), `${g}/${r}`).toThrow(
        expect.objectContaining({ code: 'delivery_fence_out_of_range' }),
      );
    expect(Number.isSafeInteger(deliveryFence({ generation: 2 ** 21 }, 2 ** 32 - 2))).toBe(true);
  });
});
