// Smallest reproduction of the one ts-mls 1.6.4 incompatibility met here, and of the workarounds used in
// lib/ts-member.mjs and lib/external-sender.mjs.
//
// RFC 9420 12.1.8.1: the external_senders extension's data is `ExternalSender external_senders<V>` (a
// vector). openmls (so @snazzah/davey) and mlspp (libdave) encode it that way. ts-mls 1.6.4 (and npm's
// 2.0.0-rc.10) encodes and decodes it as ONE ExternalSender with no vector header; the ts-mls repository
// fixed it in "Make external_senders extension take multiple credentials (#476)", first in tag
// v2.0.0-rc.12, which is not on npm.
//
// Run: PATH=~/.node22/node_modules/.bin:$PATH node repro-ts-mls-external-senders.mjs

import {
  createGroup,
  processPublicMessage,
  proposeExternal,
  generateKeyPackage,
  encodeExternalSender,
  emptyPskIndex,
} from 'ts-mls';
import { unprotectPublicMessage } from 'ts-mls/messageProtectionPublic.js';
import { processProposal } from 'ts-mls/clientState.js';
import davey from '@snazzah/davey';
import { dave1Ciphersuite, p256KeyPair } from './lib/external-sender.mjs';
import { vec } from './lib/wire.mjs';

const cs = await dave1Ciphersuite();
const caps = { versions: ['mls10'], ciphersuites: [cs.name], extensions: [], proposals: [], credentials: ['basic'] };
const life = { notBefore: 0n, notAfter: 2n ** 64n - 1n };
const es = p256KeyPair();
const esStruct = { signaturePublicKey: es.publicKey, credential: { credentialType: 'basic', identity: new Uint8Array([0, 1, 1, 0]) } };
const single = encodeExternalSender(esStruct); // what ts-mls puts in the extension
const rfcVector = new Uint8Array(vec(single)); // what the RFC, openmls and mlspp put there
console.log('ExternalSender (op 25 payload):      ', Buffer.from(single).toString('hex').slice(0, 24) + '…', single.length, 'bytes');
console.log('external_senders extension data (RFC):', Buffer.from(rfcVector).toString('hex').slice(0, 28) + '…', rfcVector.length, 'bytes');

const alice = await generateKeyPackage({ credentialType: 'basic', identity: new Uint8Array(8).fill(1) }, caps, life, [], cs);
const bob = await generateKeyPackage({ credentialType: 'basic', identity: new Uint8Array(8).fill(2) }, caps, life, [], cs);
const groupId = new Uint8Array(8).fill(9);

// 1. createGroup refuses the RFC encoding.
try {
  await createGroup(groupId, alice.publicPackage, alice.privatePackage, [{ extensionType: 'external_senders', extensionData: rfcVector }], cs);
  console.log('1. createGroup with RFC external_senders: accepted (bug fixed?)');
} catch (e) {
  console.log(`1. createGroup with RFC external_senders: ${e.constructor.name}: ${e.message}`);
}

// 2. Workaround: create without it, then set the group context's extensions (epoch 0's secrets are
//    random and do not depend on the extensions; they only enter the GroupContext hashed at the next commit).
let state = await createGroup(groupId, alice.publicPackage, alice.privatePackage, [], cs);
state = { ...state, groupContext: { ...state.groupContext, extensions: [{ extensionType: 'external_senders', extensionData: rfcVector }] } };

// The external sender signs an Add(bob). (proposeExternal itself also expects the one-sender form, so the
// gateway passes it a context with that form; the signature does not cover the group context.)
const fakeCtx = { groupContext: { ...state.groupContext, extensions: [{ extensionType: 'external_senders', extensionData: single }] } };
const msg = await proposeExternal(fakeCtx, { proposalType: 'add', add: { keyPackage: bob.publicPackage } }, es.publicKey, es.signKey, cs);

// 3. processPublicMessage cannot verify it in the RFC-encoded group: it decodes the vector as one sender.
try {
  await processPublicMessage(state, msg.publicMessage, emptyPskIndex, cs);
  console.log('3. processPublicMessage(external proposal): accepted (bug fixed?)');
} catch (e) {
  console.log(`3. processPublicMessage(external proposal): ${e.constructor.name}: ${e.message}`);
}

// 4. Workaround: verify with the key we decoded ourselves, then queue the proposal.
const content = await unprotectPublicMessage(state.keySchedule.membershipKey, state.groupContext, state.ratchetTree, msg.publicMessage, cs, es.publicKey);
state = await processProposal(state, content, content.content.proposal, cs.hash);
console.log('4. unprotectPublicMessage(override key) + processProposal: queued', Object.keys(state.unappliedProposals).length, 'proposal');

// 5. And davey accepts the op 25 payload in the single form (it is the ExternalSender struct itself).
const s = new davey.DAVESession(1, '1', '1');
s.setExternalSender(Buffer.from(single));
console.log('5. davey.setExternalSender(op 25 payload): ok, status', s.status);

// 6. Why not just keep ts-mls's own encoding: a group made that way is unreadable to davey (openmls).
{
  const { createCommit } = await import('ts-mls');
  const { decodeKeyPackage } = await import('ts-mls/keyPackage.js');
  const { encodeWelcome } = await import('ts-mls/welcome.js');
  const bot = new davey.DAVESession(1, '3', '1');
  bot.setExternalSender(Buffer.from(single));
  const botKp = decodeKeyPackage(new Uint8Array(bot.getSerializedKeyPackage()), 0)[0];
  let g = await createGroup(groupId, alice.publicPackage, alice.privatePackage, [{ extensionType: 'external_senders', extensionData: single }], cs);
  const { welcome } = await createCommit({ state: g, cipherSuite: cs }, { wireAsPublicMessage: true, ratchetTreeExtension: true, extraProposals: [{ proposalType: 'add', add: { keyPackage: botKp } }] });
  try {
    bot.processWelcome(Buffer.from(encodeWelcome(welcome)));
    console.log('6. davey.processWelcome(group with ts-mls-encoded external_senders): accepted');
  } catch (e) {
    console.log(`6. davey.processWelcome(group with ts-mls-encoded external_senders): ${e.message}`);
  }
}
