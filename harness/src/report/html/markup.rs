//! A minimal HTML/SVG tree that escapes by construction: tag and attribute names are
//! `&'static str` chosen by this code, every attribute value and text is escaped when
//! rendered, and unescaped markup can only come from `&'static str` constants. Permutation
//! ids, reasons and params come from files and may hold `<`, `&` or quotes; this is what keeps
//! them text.

/// A node of the document.
#[derive(Clone, Debug)]
pub enum Node {
    Element(Element),
    Text(String),
    /// Markup written in this source code (the style sheet, the doctype).
    Static(&'static str),
}

/// An element with attributes and children.
#[derive(Clone, Debug)]
pub struct Element {
    tag: &'static str,
    attrs: Vec<(&'static str, String)>,
    children: Vec<Node>,
}

/// HTML elements that have no end tag.
const VOID: &[&str] = &["br", "col", "hr", "img", "input", "link", "meta"];

/// Starts an element.
pub fn el(tag: &'static str) -> Element {
    Element {
        tag,
        attrs: Vec::new(),
        children: Vec::new(),
    }
}

/// A text node (escaped when rendered).
pub fn text(s: impl Into<String>) -> Node {
    Node::Text(s.into())
}

impl Element {
    /// Sets an attribute, replacing one of the same name; its value is escaped when rendered.
    pub fn attr(mut self, name: &'static str, value: impl ToString) -> Self {
        let value = value.to_string();
        match self.attrs.iter_mut().find(|(n, _)| *n == name) {
            Some(existing) => existing.1 = value,
            None => self.attrs.push((name, value)),
        }
        self
    }

    /// Adds a child element or node.
    pub fn child(mut self, node: impl Into<Node>) -> Self {
        self.children.push(node.into());
        self
    }

    /// Adds children.
    pub fn children(mut self, nodes: impl IntoIterator<Item = impl Into<Node>>) -> Self {
        self.children.extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Adds a text child.
    pub fn text(self, s: impl Into<String>) -> Self {
        self.child(text(s))
    }

    /// Adds a `<title>` child: the tooltip of an SVG shape.
    pub fn tooltip(self, s: impl Into<String>) -> Self {
        self.child(el("title").text(s))
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        out.push('<');
        out.push_str(self.tag);
        for (name, value) in &self.attrs {
            out.push(' ');
            out.push_str(name);
            out.push_str("=\"");
            escape_into(value, out);
            out.push('"');
        }
        out.push('>');
        if VOID.contains(&self.tag) {
            return;
        }
        for child in &self.children {
            child.render_into(out);
        }
        // Always an end tag: `<td/>` would not close in HTML (only SVG honours `/>`).
        out.push_str("</");
        out.push_str(self.tag);
        out.push('>');
    }
}

impl Node {
    fn render_into(&self, out: &mut String) {
        match self {
            Node::Element(e) => e.render_into(out),
            Node::Text(s) => escape_into(s, out),
            Node::Static(s) => out.push_str(s),
        }
    }
}

impl From<Element> for Node {
    fn from(e: Element) -> Self {
        Node::Element(e)
    }
}

/// Escapes text for HTML content and double- or single-quoted attribute values. Control
/// characters other than tab and line breaks (ANSI colour codes from a serial console) are
/// shown as U+FFFD: they are not allowed in HTML text.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(s, &mut out);
    out
}

fn escape_into(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// A relative URL for a path relative to the report: each segment percent-encoded (an id
/// may hold `#`, `?`, `%` or spaces), `/` kept, `.` segments dropped.
pub fn href(segments: &[&str]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for seg in segments.iter().flat_map(|s| s.split('/')) {
        if seg.is_empty() || seg == "." {
            continue;
        }
        let mut enc = String::new();
        for b in seg.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                enc.push(b as char);
            } else {
                enc.push_str(&format!("%{b:02X}"));
            }
        }
        parts.push(enc);
    }
    // A leading `./` keeps a first segment with a `:` from reading as a URL scheme.
    if parts.first().is_some_and(|p| p == "..") {
        parts.join("/")
    } else {
        format!("./{}", parts.join("/"))
    }
}

/// A number for an SVG coordinate: one decimal, no `-0.0`.
pub fn num(x: f64) -> String {
    let s = format!("{:.1}", x);
    if s == "-0.0" {
        "0.0".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_are_escaped() {
        let hostile = "<script>alert('x')</script> & \"q\"";
        let html = el("p")
            .attr("data-permutation", hostile)
            .text(hostile)
            .render();
        assert_eq!(
            html,
            "<p data-permutation=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;\">\
             &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;</p>"
        );
        assert_eq!(
            escape("a\u{1b}[31mred\u{1b}[0m\n"),
            "a\u{FFFD}[31mred\u{FFFD}[0m\n"
        );
    }

    #[test]
    fn end_tags_except_void_elements() {
        assert_eq!(el("td").render(), "<td></td>");
        assert_eq!(
            el("ul")
                .attr("class", "a")
                .attr("id", "x")
                .attr("class", "b")
                .render(),
            "<ul class=\"b\" id=\"x\"></ul>"
        );
        assert_eq!(el("rect").attr("x", 1).render(), "<rect x=\"1\"></rect>");
        assert_eq!(
            el("meta").attr("charset", "utf-8").render(),
            "<meta charset=\"utf-8\">"
        );
        let nested = el("svg")
            .child(el("g").child(Node::Static("<!-- static -->")))
            .render();
        assert_eq!(nested, "<svg><g><!-- static --></g></svg>");
    }

    #[test]
    fn hrefs_are_relative_and_percent_encoded() {
        assert_eq!(
            href(&["virtio.512.bios.by-id", "result.json"]),
            "./virtio.512.bios.by-id/result.json"
        );
        assert_eq!(href(&[".", "serial.log"]), "./serial.log");
        assert_eq!(
            href(&["a b#?%\"<", "assets/x.log"]),
            "./a%20b%23%3F%25%22%3C/assets/x.log"
        );
        assert_eq!(href(&["c:", "x"]), "./c%3A/x");
        assert_eq!(href(&["../runs/a", "serial.log"]), "../runs/a/serial.log");
    }

    #[test]
    fn numbers() {
        assert_eq!(num(1.26), "1.3");
        assert_eq!(num(-0.01), "0.0");
        assert_eq!(num(960.0), "960.0");
    }
}
