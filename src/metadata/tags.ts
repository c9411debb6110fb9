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
 * Never copied from the input, at any level. A blind copy gets these wrong: they describe
 * the master's own pixels, encoding or colour, not the service's result.
 * - embedded images (the EXIF thumbnail in IFD1, previews, MPF pages, Photoshop's and XMP's
 *   thumbnails): they show the master's pixels, not the output's;
 * - orientation: darkroom turns the pixels upright before upload, so the output is 1;
 * - colour: the input's ICC profile and colour-space tags (the service's pixels are sRGB);
 * - geometry and encoding: stated pixel sizes, resolution, YCbCr and TIFF structure tags;
 * - what darkroom writes itself: the document's identity, its derivation, its history (the
 *   original's events and one per step, in one list) and the AI disclosure.
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

/**
 * The ExifTool arguments that copy `source`'s tags at `level` onto the file being written.
 * For a format with no place for IPTC-IIM, IPTC is first mapped to XMP, then the input's own
 * XMP is copied over it: where both say a thing, XMP wins (the newer of the two in every
 * tool that writes both).
 */
export function copyArgs(level: Exclude<MetadataLevel, 'none'>, source: string, kind: OutputKind): string[] {
  const xmpOnly = kind !== 'jpeg';
  const args: string[] = [];
  if (xmpOnly) args.push('-tagsFromFile', source, ...(level === 'all' ? IPTC_TO_XMP : BASIC_IPTC_TO_XMP));
  args.push('-tagsFromFile', source);
  if (level === 'all') args.push('-all:all');
  else args.push(...BASIC_TAGS.filter((t) => !(xmpOnly && t.startsWith('-IPTC:'))));
  if (xmpOnly) args.push('--IPTC:all');
  args.push(...NEVER_CARRIED);
  return args;
}

/**
 * The arguments that copy `source`'s tags at `level` into an XMP sidecar: EXIF and IPTC
 * translated by ExifTool's own mappings, then the input's XMP over them.
 */
export function sidecarCopyArgs(level: Exclude<MetadataLevel, 'none'>, source: string): string[] {
  const exif =
    level === 'all'
      ? EXIF_TO_XMP
      : EXIF_TO_XMP.filter((l) => /DateCreated|CreateDate|Description|Rights|Creator|GPS|DateTimeOriginal/.test(l.split('<')[0]!));
  const iptc = level === 'all' ? IPTC_TO_XMP : BASIC_IPTC_TO_XMP;
  const own = level === 'all' ? ['-XMP:all'] : BASIC_TAGS.filter((t) => t.startsWith('-XMP'));
  return ['-tagsFromFile', source, ...exif, ...iptc, ...NEVER_CARRIED, '-tagsFromFile', source, ...own, ...NEVER_CARRIED];
}
