import { MessageFlags, type RepliableInteraction } from 'discord.js';

/**
 * Tells only the member who acted, whatever the interaction has answered so far: a first reply is
 * ephemeral; a private "thinking…" placeholder becomes the message; a public one is removed rather than
 * edited (the whole channel would read it) and the message follows privately; after a deferUpdate the
 * message with the component stays as it was. Mentions in `content` never ping anyone.
 */
export async function answerPrivately(interaction: RepliableInteraction, content: string): Promise<void> {
  const message = { content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } } as const;
  if (!interaction.deferred && !interaction.replied) {
    await interaction.reply(message);
    return;
  }
  const placeholderShown = interaction.deferred && !interaction.replied;
  // deferReply sets `ephemeral` to true or false; deferUpdate leaves it null (no placeholder of its own).
  if (placeholderShown && interaction.ephemeral === true) {
    await interaction.editReply({ content, components: [], embeds: [], allowedMentions: { parse: [] } });
    return;
  }
  if (placeholderShown && interaction.ephemeral === false) {
    // A placeholder that cannot be removed (already gone, say) must not keep the member from the answer.
    await interaction.deleteReply().catch(() => undefined);
  }
  await interaction.followUp(message);
}
