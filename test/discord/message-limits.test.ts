import { describe, expect, it } from 'vitest';
import { brokenLimit } from '../../src/discord/message-limits.ts';

// Discord refuses a whole message over any of its limits (400 / 50035); the answer is checked first so
// that the member hears it was too long, not that something went wrong.

const TEN_MIB = 10 * 1024 * 1024;
const file = (bytes: number) => ({ name: 'a.csv', data: Buffer.alloc(bytes) });

describe('brokenLimit', () => {
  it('lets through a message within every limit', () => {
    expect(brokenLimit({ content: 'x'.repeat(2000), files: Array.from({ length: 10 }, () => file(1)) }, TEN_MIB)).toBeUndefined();
    expect(brokenLimit({ embeds: [{ title: 't'.repeat(256), description: 'd'.repeat(4096) }] }, TEN_MIB)).toBeUndefined();
  });

  it('names the first limit broken, with what the message has and what Discord allows', () => {
    expect(brokenLimit({ content: 'x'.repeat(2001) }, TEN_MIB)).toEqual({ limit: 'content', actual: 2001, max: 2000 });
    expect(brokenLimit({ files: Array.from({ length: 11 }, () => file(1)) }, TEN_MIB)).toEqual({ limit: 'files', actual: 11, max: 10 });
    expect(brokenLimit({ files: [file(TEN_MIB + 1)] }, TEN_MIB)).toEqual({ limit: 'fileBytes', actual: TEN_MIB + 1, max: TEN_MIB });
    const descriptions = Array.from({ length: 2 }, () => ({ description: 'd'.repeat(3001) }));
    expect(brokenLimit({ embeds: descriptions }, TEN_MIB)).toEqual({ limit: 'embedTotal', actual: 6002, max: 6000 });
    const texts = Array.from({ length: 41 }, () => ({ type: 10 as const, content: 'x' }));
    expect(brokenLimit({ card: texts }, TEN_MIB)).toEqual({ limit: 'cardComponents', actual: 41, max: 40 });
    expect(brokenLimit({ card: [{ type: 17, components: [{ type: 10, content: 'x'.repeat(4001) }] }] }, TEN_MIB)).toEqual({
      limit: 'cardText',
      actual: 4001,
      max: 4000,
    });
  });
});
