/** GET /campaigns/{campaignId} (spec §4.10, scope campaigns:read): `campaign` and `recipientCounts`. */
import { notFound } from '../http-error.ts';
import { campaignView } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';

function getCampaign(context: RequestContext) {
  const campaign = context.company.data.campaigns.find((candidate) => candidate.id === context.params.campaignId);
  if (!campaign) throw notFound(`Campaign ${context.params.campaignId} not found`);
  return { message: 'Campaign retrieved', content: { campaign: campaignView(campaign), recipientCounts: { ...campaign.recipientCounts } } };
}

/** GET /campaigns/{campaignId} (spec §4.10). */
export const campaignRoutes: Route[] = [{ method: 'GET', path: '/campaigns/{campaignId}', scope: 'campaigns:read', handler: getCampaign }];
