//! The small layout engine the PDFs are drawn with: the embedded fonts, text measured and wrapped
//! by shaping it (rustybuzz), the paper, the org's look, and a writer that lays text, rules and the
//! logo down pages top to bottom and draws them with krilla, each page with its footer and "page
//! n of m".

use std::sync::LazyLock;

use invoicer_core::documents::i18n::Tr;
use krilla::color::rgb;
use krilla::geom::{PathBuilder, Point};
use krilla::metadata::Metadata;
use krilla::num::NormalizedF32;
use krilla::page::PageSettings;
use krilla::paint::{Fill, Stroke};
use krilla::surface::Surface;
use krilla::text::{Font, TextDirection};
use krilla::Document;

static REGULAR: &[u8] = include_bytes!(env!("INVOICER_PDF_FONT_REGULAR"));
static BOLD: &[u8] = include_bytes!(env!("INVOICER_PDF_FONT_BOLD"));

struct Face {
    font: Font,
    shaper: rustybuzz::Face<'static>,
}

impl Face {
    fn load(data: &'static [u8]) -> Face {
        Face {
            font: Font::new(data.into(), 0).expect("the embedded font parses"),
            shaper: rustybuzz::Face::from_slice(data, 0).expect("the embedded font parses"),
        }
    }

    /// The width of `text` at `size` points, as it will be drawn.
    fn width(&self, text: &str, size: f32) -> f32 {
        self.advances(text, size).iter().sum()
    }

    /// `text` shaped once: for each byte, the advance (in points at `size`) of the glyphs of the
    /// cluster that starts there (0 inside a cluster).
    fn advances(&self, text: &str, size: f32) -> Vec<f32> {
        #[cfg(test)]
        tests::SHAPED.with(|n| n.set(n.get() + text.len()));
        let mut buffer = rustybuzz::UnicodeBuffer::new();
        buffer.push_str(text);
        let shaped = rustybuzz::shape(&self.shaper, &[], buffer);
        let scale = size / self.shaper.units_per_em() as f32;
        let mut advance = vec![0.0; text.len()];
        for (info, pos) in shaped.glyph_infos().iter().zip(shaped.glyph_positions()) {
            if let Some(a) = advance.get_mut(info.cluster as usize) {
                *a += pos.x_advance as f32 * scale;
            }
        }
        advance
    }
}

static FACES: LazyLock<(Face, Face)> = LazyLock::new(|| (Face::load(REGULAR), Face::load(BOLD)));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paper {
    A4,
    Letter,
}

impl Paper {
    /// As the `paper` query names it.
    pub fn name(self) -> &'static str {
        match self {
            Paper::A4 => "a4",
            Paper::Letter => "letter",
        }
    }

    /// Width and height in points.
    fn size(self) -> (f32, f32) {
        match self {
            Paper::A4 => (595.28, 841.89),
            Paper::Letter => (612.0, 792.0),
        }
    }
}

pub(super) const MARGIN: f32 = 50.0;
pub(super) const BODY: f32 = 10.0;
pub(super) const LINE: f32 = 14.0;

/// The org's look on its PDFs: its accent colour on the document's title and the rules, its logo
/// above its name, its footer text on every page.
#[derive(Clone, Default)]
pub struct Brand {
    accent: Option<(u8, u8, u8)>,
    /// The logo and the size it is drawn at, in points.
    logo: Option<(krilla::image::Image, f32, f32)>,
    footer: String,
}

/// The logo's height on paper, in points (its width follows, up to [`LOGO_WIDTH`]).
const LOGO_HEIGHT: f32 = 40.0;
const LOGO_WIDTH: f32 = 180.0;

impl Brand {
    /// `org`'s look, its logo file read when it has one.
    pub async fn of(
        conn: &mut sqlx::PgConnection,
        org: model::OrgId,
        branding: &model::Branding,
    ) -> sqlx::Result<Brand> {
        let png = match branding.logo {
            Some(_) => invoicer_core::documents::branding::logo_of(conn, org).await?,
            None => None,
        };
        Ok(Brand::new(branding, png))
    }

    /// `branding` as PDFs draw it; `logo_png`: the org's logo file (re-encoded PNG).
    pub fn new(branding: &model::Branding, logo_png: Option<Vec<u8>>) -> Brand {
        let logo = branding
            .logo
            .as_ref()
            .zip(logo_png)
            .and_then(|(size, png)| {
                // No interpolation: PDF/A forbids it.
                let image = krilla::image::Image::from_png(png.into(), false).ok()?;
                let (w, h) = (size.width.max(1) as f32, size.height.max(1) as f32);
                let scale = (LOGO_HEIGHT / h).min(LOGO_WIDTH / w);
                Some((image, w * scale, h * scale))
            });
        Brand {
            accent: branding.rgb(),
            logo,
            footer: branding.footer_text.clone(),
        }
    }
}

/// Draws pages top to bottom, starting a new page when the next block does not fit.
pub(super) struct Writer<'a> {
    doc: &'a mut Document,
    paper: Paper,
    pages: Vec<Vec<Op>>,
    pub(super) y: f32,
    brand: Brand,
    /// The customer's language.
    tr: Tr,
}

/// What is drawn on a page, recorded first so "page n of m" can be written once m is known.
enum Op {
    Text {
        x: f32,
        y: f32,
        text: String,
        size: f32,
        bold: bool,
        grey: bool,
        colour: Option<(u8, u8, u8)>,
    },
    Rule {
        y: f32,
        weight: f32,
        colour: Option<(u8, u8, u8)>,
    },
    Image {
        x: f32,
        y: f32,
        width: f32,
        height: f32,
        image: krilla::image::Image,
    },
    /// Black squares of side `size` at (x + column × size, y + row × size): a QR code, as vectors.
    Squares {
        x: f32,
        y: f32,
        size: f32,
        at: Vec<(usize, usize)>,
    },
}

impl Writer<'_> {
    pub(super) fn width(&self) -> f32 {
        self.paper.size().0
    }

    pub(super) fn bottom(&self) -> f32 {
        self.paper.size().1 - MARGIN - LINE
    }

    pub(super) fn new_page(&mut self) {
        self.pages.push(Vec::new());
        self.y = MARGIN;
    }

    /// Makes room for `height` more points, on a new page if need be.
    pub(super) fn room(&mut self, height: f32) {
        if self.y + height > self.bottom() {
            self.new_page();
        }
    }

    fn push(&mut self, op: Op) {
        self.pages.last_mut().expect("a page was started").push(op);
    }

    pub(super) fn text(&mut self, x: f32, text: &str, size: f32, bold: bool) {
        let y = self.y;
        self.push(Op::Text {
            x,
            y,
            text: text.to_owned(),
            size,
            bold,
            grey: false,
            colour: None,
        });
    }

    /// The document's title (INVOICE, CREDIT NOTE) ending at `right`, in the org's accent.
    pub(super) fn title_right(&mut self, right: f32, text: &str) {
        let x = right - FACES.1.width(text, 16.0);
        let y = self.y;
        let colour = self.brand.accent;
        self.push(Op::Text {
            x,
            y,
            text: text.to_owned(),
            size: 16.0,
            bold: true,
            grey: false,
            colour,
        });
    }

    /// The org's logo at the top left (when it has one); the text goes on below it.
    pub(super) fn logo(&mut self) {
        if let Some((image, width, height)) = self.brand.logo.clone() {
            let y = self.y;
            self.push(Op::Image {
                x: MARGIN,
                y,
                width,
                height,
                image,
            });
            self.y += height + 8.0;
        }
    }

    /// A QR code's dark modules, `module` points each, its top left corner at (`x`, this line);
    /// the text goes on below it.
    pub(super) fn squares(&mut self, x: f32, module: f32, side: usize, at: Vec<(usize, usize)>) {
        let y = self.y;
        self.push(Op::Squares {
            x,
            y,
            size: module,
            at,
        });
        self.y += side as f32 * module;
    }

    pub(super) fn grey(&mut self, x: f32, text: &str, size: f32) {
        let y = self.y;
        self.push(Op::Text {
            x,
            y,
            text: text.to_owned(),
            size,
            bold: false,
            grey: true,
            colour: None,
        });
    }

    /// `text` ending at `right`.
    pub(super) fn text_right(&mut self, right: f32, text: &str, size: f32, bold: bool) {
        let face = if bold { &FACES.1 } else { &FACES.0 };
        let x = right - face.width(text, size);
        self.text(x, text, size, bold);
    }

    pub(super) fn rule(&mut self, weight: f32) {
        let y = self.y;
        let colour = self.brand.accent;
        self.push(Op::Rule { y, weight, colour });
    }

    pub(super) fn finish(self, footer: &str) {
        let (width, height) = self.paper.size();
        let count = self.pages.len();
        for (n, ops) in self.pages.into_iter().enumerate() {
            let mut page = self
                .doc
                .start_page_with(PageSettings::from_wh(width, height).expect("a paper size"));
            let mut surface = page.surface();
            for op in ops {
                draw(&mut surface, op, width);
            }
            // The org's footer text, its last lines just above the page label.
            let lines = wrap(&self.brand.footer, width - 2.0 * MARGIN, 8.0);
            let lines = if self.brand.footer.is_empty() {
                &[][..]
            } else {
                &lines[lines.len().saturating_sub(3)..]
            };
            for (i, line) in lines.iter().enumerate() {
                let above = (lines.len() - i) as f32 * 10.0;
                draw(
                    &mut surface,
                    Op::Text {
                        x: MARGIN,
                        y: height - MARGIN / 2.0 - above,
                        text: line.clone(),
                        size: 8.0,
                        bold: false,
                        grey: true,
                        colour: None,
                    },
                    width,
                );
            }
            let label = self.tr.t_args(
                "pdf-page",
                &[
                    ("document", footer),
                    ("page", &(n + 1).to_string()),
                    ("pages", &count.to_string()),
                ],
            );
            draw(
                &mut surface,
                Op::Text {
                    x: MARGIN,
                    y: height - MARGIN / 2.0,
                    text: label,
                    size: 8.0,
                    bold: false,
                    grey: true,
                    colour: None,
                },
                width,
            );
            surface.finish();
            page.finish();
        }
    }
}

fn draw(surface: &mut Surface<'_>, op: Op, width: f32) {
    match op {
        Op::Text {
            x,
            y,
            text,
            size,
            bold,
            grey,
            colour,
        } => {
            let shade = if grey { 110 } else { 20 };
            let (r, g, b) = colour.unwrap_or((shade, shade, shade));
            surface.set_fill(Some(Fill {
                paint: rgb::Color::new(r, g, b).into(),
                ..Fill::default()
            }));
            let face = if bold { &FACES.1 } else { &FACES.0 };
            surface.draw_text(
                Point::from_xy(x, y),
                face.font.clone(),
                size,
                &text,
                false,
                TextDirection::Auto,
            );
        }
        Op::Image {
            x,
            y,
            width,
            height,
            image,
        } => {
            if let Some(size) = krilla::geom::Size::from_wh(width, height) {
                surface.push_transform(&krilla::geom::Transform::from_translate(x, y));
                surface.draw_image(image, size);
                surface.pop();
            }
        }
        Op::Squares { x, y, size, at } => {
            let mut path = PathBuilder::new();
            for (column, row) in at {
                if let Some(square) = krilla::geom::Rect::from_xywh(
                    x + column as f32 * size,
                    y + row as f32 * size,
                    size,
                    size,
                ) {
                    path.push_rect(square);
                }
            }
            if let Some(path) = path.finish() {
                surface.set_stroke(None);
                surface.set_fill(Some(Fill {
                    paint: rgb::Color::new(0, 0, 0).into(),
                    ..Fill::default()
                }));
                surface.draw_path(&path);
            }
        }
        Op::Rule { y, weight, colour } => {
            let mut path = PathBuilder::new();
            path.move_to(MARGIN, y);
            path.line_to(width - MARGIN, y);
            if let Some(path) = path.finish() {
                surface.set_fill(None);
                let (r, g, b) = colour.unwrap_or((150, 150, 150));
                surface.set_stroke(Some(Stroke {
                    paint: rgb::Color::new(r, g, b).into(),
                    width: weight,
                    opacity: NormalizedF32::ONE,
                    ..Stroke::default()
                }));
                surface.draw_path(&path);
                surface.set_stroke(None);
            }
        }
    }
}

/// Splits `text` into lines no wider than `width` at `size`, at spaces where it can (a word longer
/// than a line is cut). Explicit newlines are kept. Each paragraph is shaped once and its lines are
/// measured from the glyphs' advances: the cost is linear in the text, whatever it holds (a word of
/// ten thousand zero-width marks included).
pub(super) fn wrap(text: &str, width: f32, size: f32) -> Vec<String> {
    let face = &FACES.0;
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let advance = face.advances(paragraph, size);
        // Width of paragraph[start..end]: the advances of the clusters that start inside it.
        let mut prefix = Vec::with_capacity(paragraph.len() + 1);
        prefix.push(0.0f32);
        for a in &advance {
            prefix.push(prefix.last().copied().unwrap_or(0.0) + a);
        }
        let span = |start: usize, end: usize| prefix[end] - prefix[start];
        let space = face.advances(" ", size)[0];
        let mut line = String::new();
        let mut line_width = 0.0;
        for word in paragraph.split_whitespace() {
            let start = word.as_ptr() as usize - paragraph.as_ptr() as usize;
            let end = start + word.len();
            let word_width = span(start, end);
            let joined = if line.is_empty() {
                word_width
            } else {
                line_width + space + word_width
            };
            if joined <= width {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(word);
                line_width = joined;
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            line_width = 0.0;
            // A word wider than the line: cut it where it overflows.
            for (i, c) in word.char_indices() {
                let w = span(start + i, start + i + c.len_utf8());
                if line_width + w > width && !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                    line_width = 0.0;
                }
                line.push(c);
                line_width += w;
            }
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// `doc` titled `title`, and a writer on its first page.
pub(super) fn start(
    doc: &mut Document,
    title: String,
    paper: Paper,
    brand: Brand,
    tr: Tr,
) -> Writer<'_> {
    doc.set_metadata(Metadata::new().title(title).creator("invoicer".to_owned()));
    let mut w = Writer {
        doc,
        paper,
        pages: Vec::new(),
        y: MARGIN,
        brand,
        tr,
    };
    w.new_page();
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Bytes handed to the shaper on this thread.
        pub(super) static SHAPED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Wrapping shapes each paragraph once: a long unbreakable word (here of zero-width marks,
    /// which never fill a line) costs shaping in proportion to its length, not its square.
    #[test]
    fn wrapping_shapes_the_text_a_bounded_number_of_times() {
        for n in [1_000, 8_000] {
            let word = format!("a{}", "\u{301}".repeat(n));
            let text = format!("{word} and some words after it {}", "x".repeat(n));
            SHAPED.with(|s| s.set(0));
            let lines = wrap(&text, 100.0, BODY);
            let shaped = SHAPED.with(|s| s.get());
            assert!(
                shaped <= 2 * text.len() + 16,
                "{shaped} bytes shaped for {} bytes of text",
                text.len()
            );
            assert_eq!(lines.concat().replace(' ', ""), text.replace(' ', ""));
        }
    }

    #[test]
    fn long_words_and_lines_wrap_within_the_width() {
        let text = format!("short words here {} end", "x".repeat(200));
        let lines = wrap(&text, 100.0, BODY);
        assert!(lines.len() > 3);
        for line in &lines {
            assert!(FACES.0.width(line, BODY) <= 100.0, "{line}");
        }
        assert_eq!(lines.concat().replace(' ', ""), text.replace(' ', ""));
        assert_eq!(wrap("", 100.0, BODY), vec![String::new()]);
    }
}
