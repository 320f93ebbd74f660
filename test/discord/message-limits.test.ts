import { describe, expect, it } from 'vitest';
import { ComponentType, TextInputStyle, type APIModalInteractionResponseCallbackData } from 'discord.js';
import { fittingChoices } from '../../src/discord/autocomplete.ts';
import { brokenLimit, brokenModalLimit } from '../../src/discord/message-limits.ts';

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
    expect(brokenLimit({ content: 'x'.repeat(2001) }, TEN_MIB)).toEqual({ field: 'content', limit: 'content', actual: 2001, max: 2000 });
    expect(brokenLimit({ files: Array.from({ length: 11 }, () => file(1)) }, TEN_MIB)).toEqual({
      field: 'files',
      limit: 'files',
      actual: 11,
      max: 10,
    });
    expect(brokenLimit({ files: [file(TEN_MIB + 1)] }, TEN_MIB)).toEqual({
      field: 'files.0',
      limit: 'fileBytes',
      actual: TEN_MIB + 1,
      max: TEN_MIB,
    });
    const descriptions = Array.from({ length: 2 }, () => ({ description: 'd'.repeat(3001) }));
    expect(brokenLimit({ embeds: descriptions }, TEN_MIB)).toEqual({ field: 'embeds', limit: 'embedTotal', actual: 6002, max: 6000 });
    const texts = Array.from({ length: 41 }, () => ({ type: 10 as const, content: 'x' }));
    expect(brokenLimit({ card: texts }, TEN_MIB)).toEqual({ field: 'components', limit: 'cardComponents', actual: 41, max: 40 });
    expect(brokenLimit({ card: [{ type: 17, components: [{ type: 10, content: 'x'.repeat(4001) }] }] }, TEN_MIB)).toEqual({
      field: 'components',
      limit: 'cardText',
      actual: 4001,
      max: 4000,
    });
  });
});

describe('brokenModalLimit', () => {
  // As JSON: discord.js's builders already throw on a title over 45 characters when it is set.
  const form = (title: string, label: string): APIModalInteractionResponseCallbackData => ({
    custom_id: 'form',
    title,
    components: [
      {
        type: ComponentType.Label,
        label,
        component: { type: ComponentType.TextInput, custom_id: 'prompt', style: TextInputStyle.Paragraph },
      },
    ],
  });

  it('lets through a form within every limit', () => {
    expect(brokenModalLimit(form('t'.repeat(45), 'l'.repeat(45)))).toBeUndefined();
  });

  it('names a title or a label over 45 characters', () => {
    expect(brokenModalLimit(form('t'.repeat(46), 'label'))).toEqual({ field: 'title', limit: 'title', actual: 46, max: 45 });
    expect(brokenModalLimit(form('title', 'l'.repeat(46)))).toEqual({ field: 'components.0.label', limit: 'label', actual: 46, max: 45 });
  });
});

describe('fittingChoices', () => {
  it('keeps 25 of 30 long suggestions, names cut between whole characters, values too long left out', () => {
    const family = '👨‍👩‍👧‍👦';
    const choices = Array.from({ length: 30 }, (_, index) => ({
      name: `${index} ${family.repeat(20)}`,
      value: index === 0 ? 'v'.repeat(101) : `model-${index}`,
    }));
    const fitted = fittingChoices(choices);
    expect(fitted).toHaveLength(25);
    expect(fitted.map((choice) => choice.value)).toEqual(Array.from({ length: 25 }, (_, index) => `model-${index + 1}`));
    for (const { name } of fitted) {
      expect(name.length).toBeLessThanOrEqual(100);
      expect(name.replace(/^\d+ /, '').replaceAll(family, '')).toBe('');
    }
  });
});
