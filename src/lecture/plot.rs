//! Line plots to PNG (plotters), with a bundled font so they render on any machine.
use std::path::Path;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSansMono.ttf");

/// One line of a plot.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Draws `series` as lines with markers, log2 x axis when `log_x`.
pub fn line_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
) -> Result<(), String> {
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    let err = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    if pts.is_empty() {
        return Err(format!("plotting {}: no finite points", path.display()));
    }
    let tx = |x: f64| if log_x { x.log2() } else { x };
    let (x0, x1) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
        (a.min(tx(p.0)), b.max(tx(p.0)))
    });
    let y1 = pts.iter().fold(0.0f64, |a, p| a.max(p.1)) * 1.1;
    let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1.max(x0 + 1e-9), 0.0..y1.max(1e-9))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(if log_x {
            format!("{x_label} (log2)")
        } else {
            x_label.to_string()
        })
        .y_desc(y_label)
        .x_labels(if log_x {
            (x1 - x0).round() as usize + 1
        } else {
            10
        })
        .x_label_formatter(&|v| {
            if log_x {
                format!("2^{v:.0}")
            } else {
                format!("{v:.0}")
            }
        })
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let p: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|p| (tx(p.0), p.1))
            .collect();
        chart
            .draw_series(LineSeries::new(p.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(p.iter().map(|&q| Circle::new(q, 3, color.filled())))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Draws grouped bars: one group per category (labelled on the x axis), one bar per
/// series in each group (`series[i].points[j].1` is series `i`'s value in category
/// `j`; the x coordinates are ignored).
pub fn bar_plot(
    path: &Path,
    title: &str,
    categories: &[String],
    y_label: &str,
    series: &[Series],
) -> Result<(), String> {
    let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    let err = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    let y1 = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        // Headroom for the legend (about 4% of the height per series) above the bars.
        * (1.1 + 0.045 * series.len() as f64);
    if categories.is_empty() || y1 <= 0.0 {
        return Err(format!("plotting {}: no finite values", path.display()));
    }
    let root = BitMapBackend::new(path, (1100, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let nc = categories.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..nc as f64, 0.0..y1)
        .map_err(|e| err(&e))?;
    let cats = categories.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        .x_labels(2 * nc + 1)
        .x_label_formatter(&move |v| {
            // Label each group at its centre only.
            let i = (*v - 0.5).round();
            if (v - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < cats.len() {
                cats[i as usize].clone()
            } else {
                String::new()
            }
        })
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|e| err(&e))?;
    let ns = series.len().max(1) as f64;
    let w = 0.8 / ns;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let bars: Vec<Rectangle<(f64, f64)>> = s
            .points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.1.is_finite())
            .map(|(j, p)| {
                let x0 = j as f64 + 0.1 + i as f64 * w;
                Rectangle::new([(x0, 0.0), (x0 + w * 0.95, p.1)], color.filled())
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(|e| err(&e))?
            .label(s.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
