import type { Profile } from '../../core/profile/model';
import { formatNumber, provenanceLabel, unitLabel } from '../../core/profile/units';
import type { LiveProfileState } from '../../common/webviewMessages';

/**
 * What the panel says about a live profile, and when a new profile is only a newer picture of the one
 * shown. Pure: no DOM.
 */

/** The parts of a `profile` message these rules read. */
export interface ShownProfile {
  profile: Profile;
  live?: LiveProfileState;
  file?: string;
}

/**
 * Whether `next` is a newer version of what `previous` showed (live sampling's next second, or the
 * same file read again): the page then redraws in place and keeps the tab, selection, search, sort,
 * scroll and zoom. Another program or another file is a new profile, drawn from the top.
 */
export function isUpdateOf(previous: ShownProfile | undefined, next: ShownProfile): boolean {
  if (!previous) return false;
  if (previous.live && next.live) return previous.profile.program.executable === next.profile.program.executable;
  return !previous.live && !next.live && previous.file !== undefined && previous.file === next.file;
}

/** The live banner: a short badge and one sentence with the count, the unit and what a sample means. */
export interface LiveBanner {
  badge: string;
  text: string;
  running: boolean;
}

/**
 * The banner of a live profile: the count so far in the profile's own unit (samples, or instructions
 * when the counting plugin counts every one; never cycles), the sampler and its attribution
 * semantics. A stopped run's last picture says it is no longer live.
 */
export function liveBanner(profile: Profile, live: LiveProfileState): LiveBanner {
  const count = `${formatNumber(profile.total?.value ?? 0)} ${unitLabel(profile.unit)}`;
  const how = `${live.samplerLabel ? `${live.samplerLabel}: ` : ''}${provenanceLabel(profile.provenance)}`;
  if (live.running) return { badge: 'live', running: true, text: `${count} so far, updated every second · ${how}` };
  return {
    badge: 'no longer live',
    running: false,
    text:
      `Sampling stopped (the session ended or live hotspots were turned off): the last ${count} · ` +
      `${how}. Run "CycleLens: Toggle Live Hotspots" in a session to sample again.`,
  };
}
