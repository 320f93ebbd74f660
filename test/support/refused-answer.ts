import type { DiscordStandIn } from 'discord-standin';

/** Has the stand-in refuse the bot's next interaction answer as Discord refuses one too long (400, 50035). */
export function refuseNextAnswer(discord: DiscordStandIn): void {
  discord.failRoute({
    method: 'POST',
    route: /^\/interactions\/\d+\/[^/]+\/callback$/,
    times: 1,
    status: 400,
    code: 50035,
    message: 'Invalid Form Body',
    errors: { data: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } } },
  });
}
