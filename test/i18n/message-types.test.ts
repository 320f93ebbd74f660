import { describe, expect, it } from 'vitest';
import { messageValuesSource } from '../../src/i18n/message-types.ts';

// The placeholders' types come from how each message uses them, so the type check asks for what the
// message needs: a count where it counts, a date where it dates, any words where it only shows them.

describe('messageValuesSource', () => {
  it('types each placeholder by how the message uses it, and a message without any as taking none', () => {
    const source = messageValuesSource({
      'usage.videos': '{count, plural, one {# video} other {# videos}} by {name}',
      'card.when': 'Made {when, date, medium} in {mode, select, fast {fast mode} other {{mode}}}',
      'shown.count': '{count, plural, one {one} other {{count} of them}}',
      'plain.words': 'Nothing to fill',
      "it's.quoted": 'Cost {amount, number}',
    });
    expect(source).toContain("  'usage.videos': { count: number; name: string | number };");
    expect(source).toContain("  'card.when': { mode: string; when: Date | number };");
    expect(source).toContain("  'shown.count': { count: number };");
    expect(source).toContain("  'plain.words': undefined;");
    expect(source).toContain("  'it\\'s.quoted': { amount: number };");
  });

  it('leaves out a message that is no ICU message (the catalog check names it)', () => {
    const source = messageValuesSource({ 'broken.one': 'an {unclosed', 'fine.one': 'fine' });
    expect(source).not.toContain('broken.one');
    expect(source).toContain("'fine.one': undefined;");
  });
});
