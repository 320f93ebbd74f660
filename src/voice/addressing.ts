// Whether a turn speaks to the bot: its transcript names the bot by one of its wake words. Speech
// recognisers write the same words with different case and punctuation ("Hey, Video-Voice-Bot!"), so
// both sides are compared as lower-case words; a leading "hey" or "ok" is no part of a name.

/** Words that may come before a name without being part of it ("hey bot", "ok bot"). */
const CALLING_WORDS = new Set(['hey', 'ok', 'okay', 'hi']);

/** Lower-case words separated by single spaces: punctuation (hyphens, commas, dots…) counts as a space. */
export function normalizeSpeech(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** A wake word as words to look for, without a leading calling word. */
function nameWords(wakeWord: string): string[] {
  const words = normalizeSpeech(wakeWord)
    .split(' ')
    .filter((word) => word !== '');
  while (words.length > 1 && CALLING_WORDS.has(words[0]!)) words.shift();
  return words;
}

/** Whether the transcript names the bot: one wake word's words appear together, anywhere, as whole words. */
export function addressesBot(transcript: string, wakeWords: readonly string[]): boolean {
  const heard = normalizeSpeech(transcript).split(' ');
  for (const wakeWord of wakeWords) {
    const name = nameWords(wakeWord);
    if (name.length === 0) continue;
    for (let start = 0; start + name.length <= heard.length; start++) {
      if (name.every((word, index) => heard[start + index] === word)) return true;
    }
  }
  return false;
}

/** Whether the bot answers only turns that name it, with `people` (not bots) in the channel. */
export function answersOnlyWhenNamed(respond: 'auto' | 'always' | 'when_named', people: number): boolean {
  if (respond === 'always') return false;
  if (respond === 'when_named') return true;
  return people >= 2;
}
