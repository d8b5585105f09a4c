// An agent's question answered where it appears (issue 42), against the
// tests' own notification server (notifyd.mjs) on the private session bus:
// the built app shows the question with its suggested answers as buttons and
// "Reply…"; a press answers the agent — its waiting get_user_request returns
// that answer, in reply to the question — and a question answered elsewhere
// (the page's reply route) has its notification withdrawn. A server without
// actions still gets the question, as a plain notification. Run by
// scripts/test-desktop.sh (Xvfb, private D-Bus session).

import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { QUICK_ADD, agentCall, endApps, quickAddReady, said, shownWindows, sleep, startHiddenApp, typeInto, until } from "./harness.mjs";
import { startNotifyd } from "./notifyd.mjs";

const home = mkdtempSync(join(tmpdir(), "local-mcp-answer-"));
const runs = [];
const servers = [];

after(async () => {
  for (const run of runs) if (!run.exited) run.child.kill("SIGKILL");
  for (const d of servers) await d.stop().catch(() => {});
});

/** Start the app; its waits long enough for a press (the default is 10 s). */
function startApp(name) {
  return startHiddenApp(home, name, runs, { extra: { DEFAULT_WAIT_SECONDS: "120" } });
}

/** An agent's call that reports `question` with `options` and waits for the answer. */
const ask = (base, agent, question, options, signal) => agentCall(base, { agent_id: agent, report: question, options }, "answer-test", { signal });

/** Answer report `report` as the page does. */
async function replyTo(base, report, content) {
  const res = await fetch(`${base}/api/reports/${encodeURIComponent(report)}/reply`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content }),
  });
  assert.equal(res.status, 201, await res.text());
}

/** The report id `agent` asks with, from the status. */
async function askingOf(base, agent) {
  return until(async () => {
    const status = await (await fetch(`${base}/api/status`)).json();
    return status.agents.find((a) => a.agent_id === agent)?.asking;
  }, `${agent}'s question in the status`);
}

test("a question's buttons answer the agent, and one answered on the page is withdrawn", async () => {
  const d = await startNotifyd({ actions: true });
  servers.push(d);
  const { base, run } = await startApp("buttons");

  // Pressed: the agent's waiting call gets the answer, in reply to the question.
  const asked = ask(base, "asker", "Merge the branch now?", ["Merge", "Wait", "Rebase first", "Drop it"]);
  const shown = await d.waitFor((n) => /asker/.test(n.summary + n.body) && n.actions.some((a) => a.key === "option:0"), `the question's notification${said(run)}`);
  assert.deepEqual(
    shown.actions.filter((a) => a.key !== "default").map((a) => [a.key, a.label]),
    [["reply", "Reply…"], ["option:0", "Merge"], ["option:1", "Wait"]],
    "Reply… first, then two short answers as buttons (three actions in all, as GNOME shows; the rest through Reply…)",
  );
  // A server that keeps a pressed notification (in its list) is told it was answered.
  d.press(shown.id, "option:1", { keep: true });
  const result = await asked;
  const pressed = await d.waitFor((n) => n.id === shown.id && n.closed, `the pressed notification withdrawn${said(run)}`, 20000);
  assert.equal(pressed.closed.by, "app", JSON.stringify(pressed.closed));
  assert.equal(result.result_type, "instruction", JSON.stringify(result));
  assert.equal(result.instruction.content, "Wait");
  assert.ok(result.instruction.in_reply_to?.question?.includes("Merge the branch now?"), JSON.stringify(result));
  // A press is only a key on the bus: a forged one for a button never shown,
  // or a second one on an answered question, queues nothing.
  const forged = ask(base, "forger", "Ship it?", ["Ship", "Hold"]);
  const ship = await d.waitFor((n) => /forger/.test(n.summary + n.body) && n.actions.length > 0, `the third question's notification${said(run)}`);
  d.signal("ActionInvoked", ship.id, "option:7");
  d.signal("ActionInvoked", shown.id, "option:0");
  await sleep(1500);
  const pending = await (await fetch(`${base}/api/instructions?status=pending`)).json();
  assert.deepEqual(pending.items ?? pending, [], "nothing queued by forged or repeated presses");
  await replyTo(base, await askingOf(base, "forger"), "Hold");
  assert.equal((await forged).instruction.content, "Hold");

  // Answered on the page: the notification is withdrawn (CloseNotification from the app).
  const second = ask(base, "deployer", "Deploy to staging?", ["Yes", "No"]);
  const deploy = await d.waitFor((n) => /deployer/.test(n.summary + n.body) && n.actions.length > 0, `the second question's notification${said(run)}`);
  await replyTo(base, await askingOf(base, "deployer"), "No");
  assert.equal((await second).instruction.content, "No");
  const closed = await d.waitFor((n) => n.id === deploy.id && n.closed, `the answered question's notification withdrawn${said(run)}`, 20000);
  assert.equal(closed.closed.by, "app", JSON.stringify(closed.closed));
  assert.equal(closed.closed.reason, 3);

  // Queued first, for that agent: it left its call, work was queued meanwhile, then a press.
  const leaving = new AbortController();
  ask(base, "returner", "Deploy now?", ["Deploy", "Later"], leaving.signal).catch(() => {});
  const back = await d.waitFor((n) => /returner/.test(n.summary + n.body) && n.actions.length > 0, `returner's question's notification${said(run)}`);
  leaving.abort();
  await until(async () => {
    const status = await (await fetch(`${base}/api/status`)).json();
    const agent = status.agents.find((a) => a.agent_id === "returner");
    return agent && !agent.waiting && agent.asking;
  }, `returner gone from its call, its question still open${said(run)}`);
  const queued = await fetch(`${base}/api/instructions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: "later work" }) });
  assert.equal(queued.status, 201, await queued.text());
  d.press(back.id, "option:0");
  const order = await until(async () => {
    const { items } = await (await fetch(`${base}/api/instructions?status=pending`)).json();
    return items.length === 2 && items.map((i) => [i.content, i.target]);
  }, `the answer queued beside the later work${said(run)}`);
  assert.deepEqual(order, [["Deploy", "returner"], ["later work", null]], "the answer first, for returner");
  const next = await agentCall(base, { agent_id: "returner" }, "answer-test");
  assert.equal(next.instruction?.content, "Deploy", JSON.stringify(next));
  assert.equal(next.instruction.in_reply_to?.question, "Deploy now?", JSON.stringify(next));
  const later = await (await fetch(`${base}/api/instructions?status=pending`)).json();
  for (const i of later.items) await fetch(`${base}/api/instructions/${i.id}`, { method: "DELETE" });

  // A server that shows no buttons: the question still arrives, as a plain notification.
  await d.stop();
  const plain = await startNotifyd({ actions: false });
  servers.push(plain);
  const third = ask(base, "plain", "Keep the old API?", ["Keep", "Remove"]);
  const got = await plain.waitFor((n) => /plain/.test(n.summary + n.body), `the question on a server without actions${said(run)}`);
  assert.match(got.summary + got.body, /Keep the old API\?/);
  await replyTo(base, await askingOf(base, "plain"), "Keep");
  assert.equal((await third).instruction.content, "Keep");
});

test("Reply… on a question's notification, or a click on it, opens quick add at that question: what is typed answers that agent", async () => {
  // A desktop of its own: the previous test's app and notification server gone.
  for (const server of servers.splice(0)) await server.stop().catch(() => {});
  await endApps();
  const d = await startNotifyd({ actions: true });
  servers.push(d);
  const { base, run } = await startApp("reply");
  for (const [agent, key, typed] of [
    ["replier", "reply", "rebase onto main first"],
    ["clicker", "default", "after lunch"],
  ]) {
    const asked = ask(base, agent, `What should ${agent} do next?`, ["Stop", "Go on"]);
    const shown = await d.waitFor((n) => n.summary.includes(agent) && n.actions.some((a) => a.key === key) && !n.closed, `${agent}'s question's notification${said(run)}`);
    d.press(shown.id, key, { keep: true });
    await quickAddReady(run);
    typeInto(QUICK_ADD, `${typed}\n`);
    const result = await Promise.race([asked, sleep(20000).then(() => null)]);
    assert.ok(result, `${agent} got no answer within 20 s of typing it${said(run)}`);
    assert.equal(result.instruction?.content, typed, JSON.stringify(result));
    assert.equal(result.instruction.in_reply_to?.question, `What should ${agent} do next?`, JSON.stringify(result));
    await until(() => !shownWindows().includes(QUICK_ADD), `the quick-add window gone once it answered${said(run)}`);
    // Kept by the server after Reply…: withdrawn by the app once the typed answer came.
    const done = await d.waitFor((n) => n.id === shown.id && n.closed, `${agent}'s notification withdrawn once answered${said(run)}`, 20000);
    assert.equal(done.closed.by, "app", JSON.stringify(done.closed));
  }
});
