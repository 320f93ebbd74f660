// Side check: does davey accept an external sender whose P-256 key is a compressed (33-byte) point, as
// ts-mls/noble produce by default? (The proof uses uncompressed 65-byte keys, like davey and libdave.)
import { DaveExternalSender } from './lib/external-sender.mjs';
import { TsMlsDaveMember } from './lib/ts-member.mjs';
import { proposalsPayload } from './lib/wire.mjs';
import { decodeKeyPackage } from 'ts-mls/keyPackage.js';
import { p256 } from '@noble/curves/nist.js';
import davey from '@snazzah/davey';
const es = await DaveExternalSender.create({ channelId: '5' });
const sk = p256.utils.randomSecretKey();
es.keys = { signKey: sk, publicKey: p256.getPublicKey(sk) }; // compressed, 33 bytes (noble default)
es.externalSender.signaturePublicKey = es.keys.publicKey;
const bot = new davey.DAVESession(1, '100', '5');
bot.setExternalSender(es.externalSenderPackage());
const m = await TsMlsDaveMember.create('200', '5');
const kp = decodeKeyPackage(new Uint8Array(await m.createKeyPackage()), 0)[0];
const p = await es.proposeAdd(0, kp);
try { const r = bot.processProposals(0, proposalsPayload(0, [p.bytes]).subarray(1), ['200']); console.log('compressed 33-byte ES key: davey accepted, commit', r.commit.length); }
catch (e) { console.log('compressed 33-byte ES key: davey refused:', e.message); }
