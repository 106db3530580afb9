import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/index.ts';
import { api, pageAll } from './helpers.ts';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator({ seed: 5, rateLimit: false });
});
afterAll(async () => {
  await simulator.close();
});

const conversationNamed = (name: string) => simulator.world.data.conversations.find((conversation) => conversation.name === name);

describe('GET /qa-corrective-actions (spec §4.4)', () => {
  it('requires locationId and filters by location, status, category and checkId', async () => {
    const missing = await api(simulator, '/qa-corrective-actions');
    expect(missing.status).toBe(400);
    expect(missing.body.message).toContain('locationId');
    const actions = simulator.world.streamRecords('qa_corrective_actions');
    const sample = actions[0];
    if (!sample) throw new Error('no actions');
    const atLocation = await pageAll(simulator, `/qa-corrective-actions?locationId=${sample.locationId}`, 'actions');
    expect(atLocation.length).toBe(actions.filter((action) => action.locationId === sample.locationId).length);
    const narrowed = await pageAll(
      simulator,
      `/qa-corrective-actions?locationId=${sample.locationId}&status=${sample.status}&category=${sample.category}&checkId=${sample.checkId}`,
      'actions',
    );
    expect(narrowed.length).toBe(
      actions.filter((a) => a.locationId === sample.locationId && a.status === sample.status && a.category === sample.category && a.checkId === sample.checkId).length,
    );
    expect(narrowed.map((item) => item.id)).toContain(sample.id);
    expect((await api(simulator, `/qa-corrective-actions?locationId=${sample.locationId}&status=PENDING`)).status).toBe(400);
  });
});

describe('GET /support-conversations/{id} (spec §4.8)', () => {
  it('returns the Support channel with messages oldest first; any other channel is 404', async () => {
    const support = conversationNamed('support');
    const response = await api(simulator, `/support-conversations/${support?.id}`);
    expect(response.status).toBe(200);
    const conversation = response.body.content.supportConversation;
    expect(conversation).toMatchObject({ id: support?.id, channel: 'threads', messageCount: 3 });
    const times = conversation.messages.map((message: { createdAt: string }) => message.createdAt);
    expect(times).toEqual([...times].sort());
    expect(conversation.messages.some((message: { internal: boolean }) => !message.internal)).toBe(true);
    expect((await api(simulator, `/support-conversations/${conversationNamed('general')?.id}`)).status).toBe(404);
  });
});

describe('GET /conversations/{id} (spec §4.12)', () => {
  it('gives members their fields, non-members of public channels nulls, 403 private non-member, 404 other company', async () => {
    const member = await api(simulator, `/conversations/${conversationNamed('general')?.id}`);
    expect(member.body.content.conversation).toMatchObject({ isMember: true, unreadCount: expect.any(Number) });
    const publicChannel = await api(simulator, `/conversations/${conversationNamed('kitchen')?.id}`);
    expect(publicChannel.body.content.conversation).toMatchObject({
      isMember: false,
      unreadCount: null,
      unreadThreadCount: null,
      lastReadAt: null,
      markedUnread: null,
      isMuted: null,
      isFavorite: null,
    });
    expect(Object.keys(publicChannel.body.content.conversation.members[0]).sort()).toEqual(['employeeId', 'isDeactivated', 'isExternal', 'name', 'role']);
    const privateChannel = await api(simulator, `/conversations/${conversationNamed('hr-private')?.id}`);
    expect(privateChannel.status).toBe(403);
    const otherCompany = simulator.world.companies.B.data.conversations[0]?.id;
    const foreign = await api(simulator, `/conversations/${otherCompany}`);
    const missing = await api(simulator, '/conversations/cnv_missing');
    expect(foreign.status).toBe(404);
    expect(foreign.body.message.replace(otherCompany ?? '', 'X')).toBe(missing.body.message.replace('cnv_missing', 'X'));
  });

  it('lets the support rota read the Support channel and needs threads:admin for archived channels', async () => {
    const support = conversationNamed('support')?.id;
    expect((await api(simulator, `/conversations/${support}`)).status).toBe(200);
    expect((await api(simulator, `/conversations/${support}`, { token: simulator.tokens.employee })).status).toBe(404);
    const archived = conversationNamed('old-announcements')?.id;
    expect((await api(simulator, `/conversations/${archived}`)).status).toBe(200);
    const denied = await api(simulator, `/conversations/${archived}`, { token: simulator.tokens.employee });
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('threads:admin');
  });
});

describe('GET /campaigns/{id} (spec §4.10)', () => {
  it('returns the campaign and recipientCounts as a sibling', async () => {
    const campaign = simulator.world.data.campaigns[1];
    const response = await api(simulator, `/campaigns/${campaign?.id}`);
    expect(response.body.content.recipientCounts).toEqual({ SENT: 180, DELIVERED: 171, SKIPPED: 24, FAILED: 9 });
    expect(response.body.content.campaign.recipientCounts).toBeUndefined();
    expect(response.body.content.campaign.audience.lifecycleStages).toEqual(['CUSTOMER']);
    expect((await api(simulator, '/campaigns/cam_missing')).status).toBe(404);
  });
});

describe('analytics (spec §4.11, §4.17)', () => {
  it('lists metrics and ranges', async () => {
    const response = await api(simulator, '/analytics/metrics');
    expect(response.body.content.metrics[0]).toEqual({ key: expect.any(String), label: expect.any(String), hint: expect.any(String), unit: expect.any(String), scope: expect.any(String) });
    expect(response.body.content.ranges.map((range: { key: string }) => range.key)).toContain('30d');
  });

  it('drops unknown keys and later metrics of another unit, and caps metric at three', async () => {
    const report = await api(simulator, '/analytics/report?metric=revenue&metric=retired_metric&metric=new_customers&range=30d&chart=bar');
    expect(report.status).toBe(200);
    expect(report.body.content.config).toMatchObject({ metrics: ['revenue'], range: '30d', chart: 'bar' });
    expect(report.body.content.points).toHaveLength(30);
    expect(report.body.content.points[0]).toEqual({ bucket: expect.any(String), revenue: expect.any(Number) });
    expect(report.body.content.summaries[0]).toEqual({ key: 'revenue', current: expect.any(Number), previous: expect.any(Number), percent: expect.any(Number) });
    expect(report.body.content.rangeNoun).toBe('30 days');
    const four = await api(simulator, '/analytics/report?metric=revenue&metric=expenses&metric=location_revenue&metric=deals_won');
    expect(four.status).toBe(400);
  });

  it('picks a metric with data when none is given; a company-scope metric ignores locationId', async () => {
    const defaulted = await api(simulator, '/analytics/report');
    expect(defaulted.body.content.config.metrics).toHaveLength(1);
    expect(defaulted.body.content.empty).toBe(false);
    const location = simulator.world.data.locations[0]?.id;
    const all = await api(simulator, '/analytics/report?metric=revenue&metric=location_revenue');
    const narrowed = await api(simulator, `/analytics/report?metric=revenue&metric=location_revenue&locationId=${location}&locationId=loc_foreign`);
    expect(narrowed.body.content.config.locationIds).toEqual([location]);
    const current = (response: typeof all, key: string) => response.body.content.summaries.find((summary: { key: string }) => summary.key === key).current;
    expect(current(narrowed, 'revenue')).toBe(current(all, 'revenue'));
    expect(current(narrowed, 'location_revenue')).toBeLessThan(current(all, 'location_revenue'));
  });
});

describe('GET /domains/{id} (spec §4.20)', () => {
  it('returns the detail with email status and assigned locations', async () => {
    const domain = simulator.world.data.domains[0];
    const response = await api(simulator, `/domains/${domain?.id}`);
    expect(response.body.content.domain).toMatchObject({ id: domain?.id, emailEnabled: true, emailStatus: 'verified', emailAddresses: expect.any(Array) });
    expect(response.body.content.domain.assignedLocations).toHaveLength(1);
    expect((await api(simulator, '/domains/dom_missing')).status).toBe(404);
  });
});
