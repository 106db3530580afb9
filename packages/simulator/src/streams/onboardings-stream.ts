/**
 * GET /employee-onboardings (spec §4.1, scope employee:onboardings:read): employees who have not
 * completed onboarding; a completed one leaves the list (`World.completeOnboarding`). Query: the
 * standard list parameters. Churn advances, completes and starts onboardings.
 */
import { FIRST_NAMES, LAST_NAMES, iso } from '../seeding.ts';
import type { OnboardingRecord } from '../records.ts';
import { onboardingView } from '../serialize.ts';
import type { SimulatedStream } from './simulated-stream.ts';

/** The highest onboarding step; churn completes onboardings that reached it. */
export const LAST_ONBOARDING_STEP = 5;

/** GET /employee-onboardings (spec §4.1). */
export const onboardingsList: SimulatedStream<OnboardingRecord, 'onboardings'> = {
  name: 'onboardings',
  path: '/employee-onboardings',
  itemsKey: 'onboardings',
  scope: 'employee:onboardings:read',
  message: 'Employee onboardings retrieved',
  defaultSize: 40,
  list: {
    sortFields: {
      updatedAt: (record) => record.updatedAt,
      onboardingStep: (record) => record.onboardingStep,
      fullname: (record) => record.fullname,
    },
    searchFields: (record) => [record.fullname],
  },
  serialize: (record, data) => onboardingView(record, data.undeclaredFields),
  generate({ random: rng, times }) {
    return times(11).map((time) => ({
      id: rng.id('onb'),
      employeeId: rng.id('emp'),
      onboardingStep: rng.int(1, 4),
      fullname: `${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`,
      createdAt: iso(time.createdMs),
      updatedAt: iso(time.updatedMs),
      completedAt: null,
    }));
  },
  churn: {
    weight: 20,
    change(company, random) {
      const action = random.next();
      const onboardings = company.onboardings;
      if (action < 0.5 && onboardings.length > 0) {
        const record = random.pick(onboardings);
        if (record.onboardingStep >= LAST_ONBOARDING_STEP) return { id: company.completeOnboarding(record.id).id, kind: 'completed' };
        return { id: company.advanceOnboarding(record.id).id, kind: 'advanced' };
      }
      if (action < 0.7 && onboardings.length > 0) {
        const record = random.pick(onboardings);
        return { id: company.completeOnboarding(record.id).id, kind: 'completed' };
      }
      return { id: company.startOnboarding().id, kind: 'started' };
    },
  },
};
