/**
 * The reference pages made from their declarations (scripts/reference-pages.ts) are what the
 * declarations make today: docs/errors.md names every code of the error catalogue, docs/settings.md
 * every stage setting with each stage's default, docs/alarms.md every alarm of both stages as
 * synthesized, each linked to a section saying what to do. A page that differs from what
 * `npm run docs:reference` would write fails here: run it, and commit the page.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STAGE_SETTING_KEYS } from '../../infra/stage-settings.ts';
import { ERROR_CATALOGUE } from '../../lib/api/errors.ts';
import { STAGES } from '../../lib/deployment.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { generatedParts, pageAsWritten } from '../../scripts/reference-pages.ts';
import { familyOf, synthesizedAlarms } from '../../scripts/reference/alarms-page.ts';
import { anchors } from '../support/markdown.ts';

const page = (file: string) => readFileSync(join(PROJECT_ROOT, file), 'utf8');
const alarms = synthesizedAlarms();
const parts = generatedParts(() => alarms);

describe('the reference pages made from their declarations', () => {
  it.each(parts.map((part) => [part.file, part] as const))(
    '%s is what `npm run docs:reference` writes',
    async (file, part) => {
      const current = page(file);
      expect(await pageAsWritten(part, current), `${file} is stale: npm run docs:reference`).toBe(
        current,
      );
    },
  );

  it('docs/errors.md has a section for every code of the catalogue, with its status', () => {
    const sections = anchors(page('docs/errors.md'));
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      expect(sections, code).toContain(`${status}-${code.toLowerCase()}`);
    }
  });

  it('docs/settings.md lists every stage setting', () => {
    const text = page('docs/settings.md');
    for (const key of STAGE_SETTING_KEYS)
      expect(text, key).toMatch(new RegExp(`^\\| \`${key}\` `, 'm'));
  });

  it('docs/alarms.md lists every alarm of both stages, each with a section saying what to do', () => {
    const text = page('docs/alarms.md');
    const sections = anchors(text);
    const ids = new Set(STAGES.flatMap((stage) => alarms[stage].map((alarm) => alarm.id)));
    expect(ids.size).toBeGreaterThan(30);
    for (const id of ids) {
      expect(text, id).toMatch(new RegExp(`^\\| \\*\\*${id}\\*\\* `, 'm'));
      const section = familyOf(id).section;
      expect(text, `${id}: ### ${section}`).toContain(`\n### ${section}\n`);
      expect(sections).toContain(
        section
          .toLowerCase()
          .replace(/[^\p{L}\p{N} _-]/gu, '')
          .replace(/ /g, '-'),
      );
    }
  });
});
