// Loaded into the bot's process (`botClockAhead()`, through NODE_OPTIONS' --import) so that its clock reads
// BOT_CLOCK_AHEAD_MS ahead of the machine's: a bot restarted so sees the minutes it measures from stored
// times (an interaction token's 15 minutes) as passed, without a test waiting for them. Only Date.now()
// moves, which is what the bot reads time with; timers are not touched.

const ahead = Number(process.env.BOT_CLOCK_AHEAD_MS ?? '0');
if (Number.isFinite(ahead) && ahead !== 0) {
  const machine = Date.now.bind(Date);
  Date.now = () => machine() + ahead;
}

export {};
