// Side check: when does the bot (davey) switch its media key to a new epoch: on processing op 29/30, or on
// op 22 execute_transition? Hold op 22 back and look at which epoch's key its frames use.
import { DaveGatewaySim, BotMember, SimMember } from './lib/gateway-sim.mjs';
import { HashRatchet, decryptFrame } from './lib/frame.mjs';
const C = '1290000000000000001';
const g = await DaveGatewaySim.create(C);
const bot = new BotMember('1290000000000000100', C);
const alice = await SimMember.create('1290000000000000201', C);
await g.join(bot);
await g.join(alice); // epoch 1, transition executed
const epoch1 = new HashRatchet(await alice.mls.senderBaseSecret(bot.userId));
g.onReady = async () => {}; // op 22 is never sent from now on
await g.join(await SimMember.create('1290000000000000202', C)); // epoch 2 committed, transition pending
const epoch2 = new HashRatchet(await alice.mls.senderBaseSecret(bot.userId));
const frame = bot.encryptOpus(Buffer.from('hello after op 29, before op 22'));
const tryKey = (r) => { try { decryptFrame(r, frame); return true; } catch { return false; } };
console.log(`bot epoch ${bot.epoch}, pending transitions in the wrapper: ${bot.dave.pendingTransitions.size}`);
console.log(`frame decrypts with epoch-1 key: ${tryKey(epoch1)}, with epoch-2 key: ${tryKey(epoch2)}`);
console.log(`simulated Alice (new ratchets prepared when she processed op 29) decrypts it: ${alice.decrypt(bot.userId, frame).toString() === 'hello after op 29, before op 22'}`);
