import type { GuildVideoPolicy } from '../ports/guild-policy.ts';
import { refuse, type Outcome } from '../wording/notice.ts';

// The server's blocked words (`/config rules blocked_words`), checked on every prompt before anything is
// reserved or sent: a prompt typed (a command's option, a form's field) and one asked for again (Regenerate,
// Vary, a held video confirmed), since the rules may have changed since it was first let through.

/** How the member gave the prompt: typed now (`typed`), or a task's own asked for again (`again`). */
export type PromptSource = 'typed' | 'again';

/** Whether the server's rules let `prompt` through; refused naming the word and the option it was typed in, with the prompt refused. */
export async function promptAllowed(
  policy: Pick<GuildVideoPolicy, 'blockedWordIn'>,
  guildId: string,
  prompt: string | undefined,
  source: PromptSource,
): Promise<Outcome<object, { prompt?: string }>> {
  // A video made from pictures alone has no words to check.
  if (!prompt || !policy.blockedWordIn) return { ok: true };
  const word = await policy.blockedWordIn(guildId, prompt);
  if (word === undefined) return { ok: true };
  const refusal =
    source === 'typed'
      ? refuse('video.refusal.blocked-word', { option: 'prompt', word })
      : refuse('video.refusal.blocked-word-again', { word });
  return { ...refusal, prompt };
}
