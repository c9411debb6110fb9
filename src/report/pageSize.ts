/**
 * Photos on one page of the report: an archive of more gets a summary page and pages of
 * photos beside it (report/index.ts). A few thousand keep a page about a megabyte of HTML that
 * opens as fast as a short one (3,000 photos: 0.8 MB); a million photos are 200 pages.
 * Alone in its file: the CLI's help names it without loading the report.
 */
export const PHOTOS_PER_PAGE = 5_000;
