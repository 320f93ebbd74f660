/**
 * What an attempt came to: it worked (with what it gives), or why not, in words for the member who asked.
 * The one shape for every "it worked / here is why not" the bot hands from one part to another; `Why`
 * adds what a refusal tells besides its message (when to try again, say).
 */
export type Result<T extends object = object, Why extends object = object> = ({ ok: true } & T) | (Refusal & Why);

export interface Refusal {
  ok: false;
  message: string;
}

export function refuse(message: string): Refusal {
  return { ok: false, message };
}
