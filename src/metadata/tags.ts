/**
 * Which of the input's tags go to its output, at each level of `output.metadata`, as
 * ExifTool arguments. The levels (docs: the job file's `output.metadata`):
 * - `all`: every tag ExifTool can copy (EXIF with the maker notes, IPTC, XMP, GPS…), less
 *   what describes the master's own pixels (NEVER_CARRIED);
 * - `basic`: dates, GPS, title, description, keywords, creator and rights (BASIC_TAGS);
 * - `none`: nothing; the output is the service's bytes exactly.
 */

export type MetadataLevel = 'all' | 'basic' | 'none';

/** IPTC's Digital Source Type for an original altered by a trained model (IPTC NewsCodes). */
export const DIGITAL_SOURCE_TYPE = 'http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia';

/** The output's kind, by what its format holds: JPEG has a place for IPTC-IIM (APP13); PNG and WEBP do not. */
export type OutputKind = 'jpeg' | 'png' | 'webp';

/**
 * ExifTool's own IPTC → XMP mapping (arg_files/iptc2xmp.args, its -XMP lines), for outputs
 * whose format has no standard place for IPTC-IIM: there the fields go to XMP, where every
 * photo manager reads them. A test compares this list with the file ExifTool ships.
 */
export const IPTC_TO_XMP: readonly string[] = [
  '-XMP-dc:Creator < IPTC:By-line',
  '-XMP-dc:Description < IPTC:Caption-Abstract',
  '-XMP-dc:Rights < IPTC:CopyrightNotice',
  '-XMP-dc:Subject < IPTC:Keywords',
  '-XMP-dc:Title < IPTC:ObjectName',
  '-XMP-photoshop:AuthorsPosition < IPTC:By-lineTitle',
  '-XMP-photoshop:CaptionWriter < IPTC:Writer-Editor',
  '-XMP-photoshop:Category < IPTC:Category',
  '-XMP-photoshop:City < IPTC:City',
  '-XMP-photoshop:Country < IPTC:Country-PrimaryLocationName',
  '-XMP-photoshop:Credit < IPTC:Credit',
  '-XMP-photoshop:DateCreated < IPTC:DateCreated',
  '-XMP-photoshop:DateCreated < Composite:DateTimeCreated',
  '-XMP-photoshop:Headline < IPTC:Headline',
  '-XMP-photoshop:Instructions < IPTC:SpecialInstructions',
  '-XMP-photoshop:Source < IPTC:Source',
  '-XMP-photoshop:State < IPTC:Province-State',
  '-XMP-photoshop:SupplementalCategories < IPTC:SupplementalCategories',
  '-XMP-photoshop:TransmissionReference < IPTC:OriginalTransmissionReference',
  '-XMP-photoshop:Urgency < IPTC:Urgency',
  '-XMP-iptcCore:CountryCode < IPTC:Country-PrimaryLocationCode',
  '-XMP-iptcCore:Location < IPTC:Sub-location',
  '-XMP-xmp:CreateDate < IPTC:DigitalCreationDate',
  '-XMP-xmp:CreateDate < Composite:DigitalCreationDateTime',
];

/**
 * ExifTool's EXIF → XMP mappings (arg_files/exif2xmp.args and gps2xmp.args), for the XMP
 * sidecar: a sidecar is XMP only, so the input's EXIF goes there translated.
 */
export const EXIF_TO_XMP: readonly string[] = [
  '-XMP-exif:all < EXIF:all',
  '-XMP-exifEX:all < EXIF:all',
  '-XMP-tiff:all < EXIF:all',
  '-XMP-dc:Description < EXIF:ImageDescription',
  '-XMP-photoshop:DateCreated < EXIF:DateTimeOriginal',
  '-XMP-photoshop:DateCreated < Composite:SubSecDateTimeOriginal',
  '-XMP-xmp:CreateDate < EXIF:CreateDate',
  '-XMP-xmp:CreateDate < Composite:SubSecCreateDate',
  '-XMP-xmp:ModifyDate < EXIF:ModifyDate',
  '-XMP-xmp:ModifyDate < Composite:SubSecModifyDate',
  '-XMP-xmp:CreatorTool < EXIF:Software',
  '-XMP-dc:Rights < EXIF:Copyright',
  '-XMP-dc:Creator < EXIF:Artist',
  '-XMP-iptcExt:DigitalImageGUID < EXIF:ImageUniqueID',
  '-XMP:GPSLatitude < Composite:GPSLatitude',
  '-XMP:GPSLongitude < Composite:GPSLongitude',
  '-XMP:GPSDestLatitude < Composite:GPSDestLatitude',
  '-XMP:GPSDestLongitude < Composite:GPSDestLongitude',
  '-XMP:GPSDateTime < Composite:GPSDateTime',
  '-XMP-exifEX:PhotographicSensitivity < EXIF:ISO',
  '-XMP-exif:DateTimeDigitized < EXIF:CreateDate',
  '-XMP-exif:DateTimeOriginal < Composite:SubSecDateTimeOriginal',
  '-XMP-exif:DateTimeDigitized < Composite:SubSecCreateDate',
  '-XMP:all < GPS:all',
];

/**
 * ExifTool's XMP → EXIF and XMP → IPTC mappings (arg_files/xmp2exif.args and
 * xmp2iptc.args, less the IPTC digest, which lives in the Photoshop block darkroom never
 * writes): what an input's XMP sidecar states is written to the output's EXIF and IPTC too,
 * so that its three places agree, as the Metadata Working Group asks of a tool that changes
 * metadata. A test compares these lists with the files ExifTool ships.
 */
export const XMP_TO_EXIF: readonly string[] = [
  '-EXIF:all < XMP-exif:all',
  '-EXIF:all < XMP-exifEX:all',
  '-EXIF:all < XMP-tiff:all',
  '-EXIF:ImageDescription < XMP-dc:Description',
  '-EXIF:DateTimeOriginal < XMP-photoshop:DateCreated',
  '-EXIF:ISO < XMP-exifEX:PhotographicSensitivity',
  '-Composite:SubSecDateTimeOriginal < XMP-exif:DateTimeOriginal',
  '-Composite:SubSecDateTimeOriginal < XMP-photoshop:DateCreated',
  '-Composite:SubSecCreateDate < XMP-exif:DateTimeDigitized',
  '-Composite:SubSecCreateDate < XMP-xmp:CreateDate',
  '-Composite:SubSecModifyDate < XMP-xmp:ModifyDate',
  '-EXIF:Software < XMP-xmp:CreatorTool',
  '-EXIF:Copyright < XMP-dc:Rights',
  '-EXIF:Artist < XMP-plus:ImageCreatorName',
  '-EXIF:Artist < XMP-dc:Creator',
  '-EXIF:ImageUniqueID < XMP-iptcExt:DigitalImageGUID',
  '-EXIF:Flash < Composite:Flash',
  '-GPS:GPSLatitudeRef < Composite:GPSLatitudeRef',
  '-GPS:GPSLongitudeRef < Composite:GPSLongitudeRef',
  '-GPS:GPSDestLatitudeRef < Composite:GPSDestLatitudeRef',
  '-GPS:GPSDestLongitudeRef < Composite:GPSDestLongitudeRef',
  '-GPS:GPSDatestamp < XMP-exif:GPSDateTime',
  '-GPS:GPSTimestamp < XMP-exif:GPSDateTime',
];

export const XMP_TO_IPTC: readonly string[] = [
  '-IPTC:By-line < XMP-dc:Creator',
  '-IPTC:Caption-Abstract < XMP-dc:Description',
  '-IPTC:CopyrightNotice < XMP-dc:Rights',
  '-IPTC:Keywords < XMP-dc:Subject',
  '-IPTC:ObjectName < XMP-dc:Title',
  '-IPTC:By-lineTitle < XMP-photoshop:AuthorsPosition',
  '-IPTC:Writer-Editor < XMP-photoshop:CaptionWriter',
  '-IPTC:Category < XMP-photoshop:Category',
  '-IPTC:City < XMP-photoshop:City',
  '-IPTC:Country-PrimaryLocationName < XMP-photoshop:Country',
  '-IPTC:Credit < XMP-photoshop:Credit',
  '-IPTC:DateCreated < XMP-photoshop:DateCreated',
  '-IPTC:TimeCreated < XMP-photoshop:DateCreated',
  '-IPTC:Headline < XMP-photoshop:Headline',
  '-IPTC:SpecialInstructions < XMP-photoshop:Instructions',
  '-IPTC:Source < XMP-photoshop:Source',
  '-IPTC:Province-State < XMP-photoshop:State',
  '-IPTC:SupplementalCategories < XMP-photoshop:SupplementalCategories',
  '-IPTC:OriginalTransmissionReference < XMP-photoshop:TransmissionReference',
  '-IPTC:Urgency < XMP-photoshop:Urgency',
  '-IPTC:Country-PrimaryLocationCode < XMP-iptcCore:CountryCode',
  '-IPTC:Sub-location < XMP-iptcCore:Location',
  '-IPTC:DigitalCreationDate < XMP-xmp:CreateDate',
  '-IPTC:DigitalCreationTime < XMP-xmp:CreateDate',
];

/**
 * Never copied from the input, at any level. A blind copy gets these wrong: they describe
 * the master's own pixels, encoding or colour, not the service's result.
 * - embedded images (the EXIF thumbnail in IFD1, previews, MPF pages, Photoshop's and XMP's
 *   thumbnails): they show the master's pixels, not the output's;
 * - orientation: darkroom turns the pixels upright before upload, so the output is 1;
 * - colour: the input's ICC profile and colour-space tags (the service's pixels are sRGB);
 * - geometry and encoding: stated pixel sizes, resolution, YCbCr and TIFF structure tags;
 * - what darkroom writes itself: the document's identity, its derivation, its history (the
 *   original's events and one per step, in one list) and the AI disclosure;
 * - a raw developer's settings (Lightroom's and Camera Raw's `crs:`, darktable's history):
 *   they describe edits to the master's pixels, and a tool that reads them would apply them
 *   again to the service's.
 */
const NEVER_CARRIED: readonly string[] = [
  '--IFD1:all',
  '--ThumbnailImage',
  '--ThumbnailTIFF',
  '--PreviewImage',
  '--PreviewTIFF',
  '--JpgFromRaw',
  '--OtherImage',
  '--MPF:all',
  '--Photoshop:all',
  '--XMP-xmp:Thumbnails',
  '--XMP-xmp:ThumbnailsImage',
  '--ICC_Profile:all',
  '--Orientation',
  '--ColorSpace',
  '--InteropIndex',
  '--Gamma',
  '--WhitePoint',
  '--PrimaryChromaticities',
  '--TransferFunction',
  '--YCbCrCoefficients',
  '--YCbCrPositioning',
  '--YCbCrSubSampling',
  '--ReferenceBlackWhite',
  '--PageNumber',
  '--SubfileType',
  '--OldSubfileType',
  '--ComponentsConfiguration',
  '--CompressedBitsPerPixel',
  '--ExifImageWidth',
  '--ExifImageHeight',
  '--RelatedImageWidth',
  '--RelatedImageHeight',
  '--XResolution',
  '--YResolution',
  '--ResolutionUnit',
  '--XMP-tiff:ImageWidth',
  '--XMP-tiff:ImageHeight',
  '--XMP-tiff:BitsPerSample',
  '--XMP-tiff:Compression',
  '--XMP-tiff:PhotometricInterpretation',
  '--XMP-tiff:SamplesPerPixel',
  '--XMP-tiff:PlanarConfiguration',
  '--XMP-exif:PixelXDimension',
  '--XMP-exif:PixelYDimension',
  '--XMP-photoshop:ICCProfileName',
  '--XMP-photoshop:ColorMode',
  '--XMP-xmpMM:DocumentID',
  '--XMP-xmpMM:InstanceID',
  '--XMP-xmpMM:OriginalDocumentID',
  '--XMP-xmpMM:DerivedFrom',
  '--XMP-xmpMM:History',
  '--XMP-xmpMM:Ingredients',
  '--XMP-xmpMM:Pantry',
  '--XMP-xmpMM:Manifest',
  '--XMP-iptcExt:DigitalSourceType',
  '--XMP-iptcExt:DigitalSourceFileType',
  '--XMP-iptcExt:AISystemUsed',
  '--XMP-iptcExt:AISystemVersionUsed',
  '--XMP-xmp:MetadataDate',
  '--XMP-crs:all',
  '--XMP-crss:all',
  '--XMP-darktable:all',
];

/**
 * `basic`: when and where it was taken, what it is called and shows, its keywords, who made
 * it and its rights, as EXIF, IPTC and XMP write them (Windows' XP tags, Lightroom's and
 * digiKam's keyword trees too).
 */
const BASIC_TAGS: readonly string[] = [
  '-EXIF:DateTimeOriginal',
  '-EXIF:CreateDate',
  '-EXIF:ModifyDate',
  '-EXIF:OffsetTime*',
  '-EXIF:SubSecTime*',
  '-GPS:all',
  '-EXIF:ImageDescription',
  '-EXIF:Artist',
  '-EXIF:Copyright',
  '-EXIF:XPTitle',
  '-EXIF:XPSubject',
  '-EXIF:XPComment',
  '-EXIF:XPKeywords',
  '-EXIF:XPAuthor',
  '-IPTC:DateCreated',
  '-IPTC:TimeCreated',
  '-IPTC:DigitalCreationDate',
  '-IPTC:DigitalCreationTime',
  '-IPTC:ObjectName',
  '-IPTC:Headline',
  '-IPTC:Caption-Abstract',
  '-IPTC:Keywords',
  '-IPTC:By-line',
  '-IPTC:CopyrightNotice',
  '-IPTC:Credit',
  '-XMP-dc:Title',
  '-XMP-dc:Description',
  '-XMP-dc:Subject',
  '-XMP-dc:Creator',
  '-XMP-dc:Rights',
  '-XMP-dc:Date',
  '-XMP-xmpRights:all',
  '-XMP-photoshop:DateCreated',
  '-XMP-photoshop:Headline',
  '-XMP-photoshop:Credit',
  '-XMP-xmp:CreateDate',
  '-XMP-exif:DateTimeOriginal',
  '-XMP-exif:DateTimeDigitized',
  '-XMP-exif:GPS*',
  '-XMP-iptcCore:CreatorContactInfo',
  '-XMP-lr:HierarchicalSubject',
  '-XMP-digiKam:TagsList',
];

/** The IPTC → XMP lines whose IPTC side `basic` carries. */
const BASIC_IPTC_TO_XMP = IPTC_TO_XMP.filter((line) => {
  const from = line.split('<')[1]!.trim();
  return BASIC_TAGS.includes(`-${from}`) || from === 'Composite:DateTimeCreated' || from === 'Composite:DigitalCreationDateTime';
});

/** Of a mapping's lines, those whose target `basic` carries. */
function basicOf(lines: readonly string[]): string[] {
  return lines.filter((line) => {
    const to = line.split('<')[0]!.trim();
    return BASIC_TAGS.includes(to) || /^-Composite:SubSec|^-GPS:|^-EXIF:(ImageDescription|Copyright|Artist)$/.test(to);
  });
}

/**
 * What an input's XMP sidecar adds: its XMP over the output's (at `all` every namespace,
 * at `basic` the basic fields), and the same fields written to EXIF and, in a JPEG, IPTC
 * (ExifTool's own mappings), so that the three agree. Given after the input's own tags, so
 * the sidecar wins where both state a field.
 */
function sidecarArgs(level: Exclude<MetadataLevel, 'none'>, sidecar: string, kind: OutputKind): string[] {
  const toExif = level === 'all' ? XMP_TO_EXIF : basicOf(XMP_TO_EXIF);
  const toIptc = kind !== 'jpeg' ? [] : level === 'all' ? XMP_TO_IPTC : basicOf(XMP_TO_IPTC);
  const own = level === 'all' ? ['-XMP:all'] : BASIC_TAGS.filter((t) => t.startsWith('-XMP'));
  return ['-tagsFromFile', sidecar, ...toExif, ...toIptc, ...NEVER_CARRIED, '-tagsFromFile', sidecar, ...own, ...NEVER_CARRIED];
}

/**
 * The ExifTool arguments that copy `source`'s tags at `level` onto the file being written,
 * then its XMP sidecars' (`sidecars`, in order: the last wins).
 * For a format with no place for IPTC-IIM, IPTC is first mapped to XMP, then the input's own
 * XMP is copied over it: where both say a thing, XMP wins (the newer of the two in every
 * tool that writes both).
 */
export function copyArgs(
  level: Exclude<MetadataLevel, 'none'>,
  source: string,
  kind: OutputKind,
  sidecars: readonly string[] = [],
): string[] {
  const xmpOnly = kind !== 'jpeg';
  const args: string[] = [];
  if (xmpOnly) args.push('-tagsFromFile', source, ...(level === 'all' ? IPTC_TO_XMP : BASIC_IPTC_TO_XMP));
  args.push('-tagsFromFile', source);
  if (level === 'all') args.push('-all:all');
  else args.push(...BASIC_TAGS.filter((t) => !(xmpOnly && t.startsWith('-IPTC:'))));
  if (xmpOnly) args.push('--IPTC:all');
  args.push(...NEVER_CARRIED);
  for (const s of sidecars) args.push(...sidecarArgs(level, s, kind));
  return args;
}

/**
 * The arguments that copy `source`'s tags at `level` into an XMP sidecar: EXIF and IPTC
 * translated by ExifTool's own mappings, then the input's XMP over them, then its own XMP
 * sidecars' over that.
 */
export function sidecarCopyArgs(level: Exclude<MetadataLevel, 'none'>, source: string, sidecars: readonly string[] = []): string[] {
  const exif =
    level === 'all'
      ? EXIF_TO_XMP
      : EXIF_TO_XMP.filter((l) => /DateCreated|CreateDate|Description|Rights|Creator|GPS|DateTimeOriginal/.test(l.split('<')[0]!));
  const iptc = level === 'all' ? IPTC_TO_XMP : BASIC_IPTC_TO_XMP;
  const own = level === 'all' ? ['-XMP:all'] : BASIC_TAGS.filter((t) => t.startsWith('-XMP'));
  const theirs = sidecars.flatMap((s) => ['-tagsFromFile', s, ...own, ...NEVER_CARRIED]);
  return ['-tagsFromFile', source, ...exif, ...iptc, ...NEVER_CARRIED, '-tagsFromFile', source, ...own, ...NEVER_CARRIED, ...theirs];
}
