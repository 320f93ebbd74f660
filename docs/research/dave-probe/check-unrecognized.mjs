// Side check: the bot (davey via @discordjs/voice) refuses an Add for a user absent from op 11 clients_connect.
import { DAVESession } from '@discordjs/voice';
import { DaveExternalSender } from './lib/external-sender.mjs';
import { TsMlsDaveMember } from './lib/ts-member.mjs';
import { proposalsPayload, ProposalsOperation } from './lib/wire.mjs';
import { decodeKeyPackage } from 'ts-mls/keyPackage.js';
const es = await DaveExternalSender.create({ channelId: '5' });
const bot = new DAVESession(1, '100', '5', {});
bot.on('keyPackage', () => {});
bot.reinit();
bot.setExternalSender(es.externalSenderPackage());
const stranger = await TsMlsDaveMember.create('200', '5');
const kp = decodeKeyPackage(new Uint8Array(await stranger.createKeyPackage()), 0)[0];
const p = await es.proposeAdd(0, kp);
try {
  const out = bot.processProposals(proposalsPayload(ProposalsOperation.APPEND, [p.bytes]), new Set(['300']));
  console.log('unrecognized add: returned', out ? `${out.length} bytes` : out);
} catch (e) {
  console.log('unrecognized add: DAVESession.processProposals threw:', e.message);
}
const out = bot.processProposals(proposalsPayload(ProposalsOperation.APPEND, [p.bytes]), new Set(['200']));
console.log('recognized add: op 28 payload of', out.length, 'bytes');
