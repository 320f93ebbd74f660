import { PermissionFlagsBits } from 'discord.js';

// The invite link an operator clicks to add the bot to a server: the two scopes it needs and exactly the
// permissions README's "Permissions to give the bot" lists, no more (Administrator would hide what is missing).

/** The permissions the bot asks for, in README's words, in the order README lists them. */
export const BOT_PERMISSIONS: readonly (readonly [name: string, flag: bigint])[] = [
  ['View Channel', PermissionFlagsBits.ViewChannel],
  ['Send Messages', PermissionFlagsBits.SendMessages],
  ['Embed Links', PermissionFlagsBits.EmbedLinks],
  ['Attach Files', PermissionFlagsBits.AttachFiles],
  ['Read Message History', PermissionFlagsBits.ReadMessageHistory],
  ['Create Public Threads', PermissionFlagsBits.CreatePublicThreads],
  ['Send Messages in Threads', PermissionFlagsBits.SendMessagesInThreads],
  ['Connect', PermissionFlagsBits.Connect],
  ['Speak', PermissionFlagsBits.Speak],
];

/** The permissions integer of the invite link (a bit field, as Discord reads it: decimal text). */
export function botPermissionsInteger(): bigint {
  return BOT_PERMISSIONS.reduce((sum, [, flag]) => sum | flag, 0n);
}

const AUTHORIZE_URL = 'https://discord.com/oauth2/authorize';

/** The link that adds the application's bot to a server with its slash commands and those permissions. */
export function inviteUrl(applicationId: string): string {
  const query = new URLSearchParams({
    client_id: applicationId,
    scope: 'bot applications.commands',
    permissions: botPermissionsInteger().toString(),
  });
  return `${AUTHORIZE_URL}?${query.toString().replaceAll('+', '%20')}`;
}
