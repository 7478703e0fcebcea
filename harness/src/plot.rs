//! The plot, on plotters (criterion's plotting backend): one panel per
//! testcase, ops/s against threads, a line per variant (baseline first),
//! named before/after (or baseline), each with the linear-scaling
//! reference drawn dashed from its 1-thread point, named in the legend too,
//! labelled axes with ticks and a legend. The same drawing goes to SVG and
//! to PNG.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::cpus::distinct;
use crate::runner::Measurement;

/// Panel size in pixels.
const PANEL: (u32, u32) = (560, 380);
/// Panels per row.
const COLUMNS: usize = 2;
/// Height of the title strip.
const TITLE: u32 = 36;

const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

fn size(results: &[Measurement]) -> (u32, u32) {
    let panels = distinct(results.iter().map(|m| m.testcase.as_str()))
        .len()
        .max(1);
    let rows = panels.div_ceil(COLUMNS) as u32;
    let cols = panels.min(COLUMNS) as u32;
    (PANEL.0 * cols, PANEL.1 * rows + TITLE)
}

/// A series' name in the legend: a seed's two variants are its before
/// and after; of more (the lockref policies against the floor), the first
/// is the baseline the others are measured against.
pub fn series_name(index: usize, count: usize, variant: &str) -> String {
    match (index, count) {
        (0, 2) => format!("before: {variant}"),
        (1, 2) => format!("after: {variant}"),
        (0, _) => format!("baseline: {variant}"),
        _ => variant.to_string(),
    }
}

/// Human-sized tick labels: 1.2M, 350k.
fn si(v: f64) -> String {
    match v.abs() {
        a if a >= 1e9 => format!("{:.1}G", v / 1e9),
        a if a >= 1e6 => format!("{:.1}M", v / 1e6),
        a if a >= 1e3 => format!("{:.0}k", v / 1e3),
        _ => format!("{v:.0}"),
    }
}

/// The font the PNG's text is drawn with (DejaVu Sans Mono; its license
/// is in `fonts/`), registered once under the family the drawing names.
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");
const FAMILY: &str = "sans-serif";

fn register_font() -> Result<(), String> {
    static REGISTERED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
                .map_err(|_| "the embedded font does not parse".to_string())
        })
        .clone()
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    results: &[Measurement],
    machine: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(TITLE);
    title.draw_text(
        &format!("lockref harness: ops/s against threads ({machine})"),
        &(FAMILY, 18).into_font().color(&BLACK),
        (10, 10),
    )?;
    let testcases = distinct(results.iter().map(|m| m.testcase.as_str()));
    let rows = testcases.len().div_ceil(COLUMNS).max(1);
    let cols = testcases.len().clamp(1, COLUMNS);
    let panels = body.split_evenly((rows, cols));
    for (panel, tc) in panels.iter().zip(&testcases) {
        let ms: Vec<&Measurement> = results.iter().filter(|m| m.testcase == *tc).collect();
        let max_threads = ms.iter().map(|m| m.threads).max().unwrap_or(1).max(2) as f64;
        let max_ops = ms.iter().map(|m| m.total).fold(1.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(*tc, (FAMILY, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(1.0..max_threads, 0.0..max_ops)?;
        chart
            .configure_mesh()
            .x_desc("threads")
            .y_desc("ops/s")
            .x_labels((max_threads as usize).min(16))
            .x_label_formatter(&|t| format!("{t:.0}"))
            .y_label_formatter(&|v| si(*v))
            .draw()?;
        let variants = distinct(ms.iter().map(|m| m.variant.as_str()));
        let count = variants.len();
        for (i, variant) in variants.into_iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let name = series_name(i, count, variant);
            let mut points: Vec<(f64, f64)> = ms
                .iter()
                .filter(|m| m.variant == variant)
                .map(|m| (m.threads as f64, m.total))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            if let Some(&(1.0, one)) = points.first() {
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(1.0, one), (max_threads, one * max_threads)],
                        6,
                        4,
                        color.mix(0.6).stroke_width(1),
                    ))?
                    .label(format!("{name}: linear (1-thread rate x threads)"))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.mix(0.6))
                    });
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FAMILY, 12))
            .draw()?;
    }
    root.present()
}

/// Writes the plot as SVG.
///
/// # Errors
///
/// A message naming the file.
pub fn svg(path: &Path, results: &[Measurement], machine: &str) -> Result<(), String> {
    // Text is measured with the font, for the SVG's layout too.
    register_font()?;
    let root = SVGBackend::new(path, size(results)).into_drawing_area();
    draw(&root, results, machine).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes the plot as PNG.
///
/// # Errors
///
/// A message naming the file.
pub fn png(path: &Path, results: &[Measurement], machine: &str) -> Result<(), String> {
    register_font()?;
    let root = BitMapBackend::new(path, size(results)).into_drawing_area();
    draw(&root, results, machine).map_err(|e| format!("{}: {e}", path.display()))
}
