//! How the scenario file's values are read: for a value of the wrong type, serde's own errors
//! name a Rust type, or nothing; these name what the file holds and what would do.

use serde::de::{self, DeserializeOwned, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

/// Deserializes a word from a fixed vocabulary (an enum of unit variants). serde's own error
/// for a value that is not a string ("wanted string or table") names neither what it found nor
/// the words that would do.
pub(crate) fn choice<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<T, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::String(s) => T::deserialize(de::value::StrDeserializer::<D::Error>::new(&s)),
        other => {
            // The words, as serde lists them for a word that is none of them.
            let probe = T::deserialize(de::value::StrDeserializer::<de::value::Error>::new(""))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            let words = probe.split_once("expected ").map_or("a string", |(_, w)| w);
            Err(de::Error::custom(format!(
                "invalid type: {} `{other}`, expected {words}",
                other.type_str()
            )))
        }
    }
}

/// `choice` for a field whose place in the file is kept.
pub(crate) fn spanned_choice<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Spanned<T>, D::Error> {
    struct Word<T>(T);
    impl<'de, T: DeserializeOwned> Deserialize<'de> for Word<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            choice(d).map(Word)
        }
    }
    let w = Spanned::<Word<T>>::deserialize(d)?;
    let span = w.span();
    Ok(Spanned::new(span, w.into_inner().0))
}

pub(crate) fn option_spanned_choice<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<Spanned<T>>, D::Error> {
    spanned_choice(d).map(Some)
}

/// A string that holds a value of its own syntax (a size, a duration): for a value of another
/// type, serde would say "expected a string", not what the string holds.
struct Text<const SIZE: bool>(String);

impl<'de, const SIZE: bool> Deserialize<'de> for Text<SIZE> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V(&'static str);
        impl Visitor<'_> for V {
            type Value = String;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(self.0)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
                Ok(s.to_string())
            }
        }
        let what = if SIZE {
            "a size such as \"8GiB\" or \"512MiB\""
        } else {
            "a duration such as \"90s\", \"20m\" or \"1h30m\""
        };
        d.deserialize_str(V(what)).map(Text)
    }
}

fn unwrap_text<const SIZE: bool>(t: Spanned<Text<SIZE>>) -> Spanned<String> {
    let span = t.span();
    Spanned::new(span, t.into_inner().0)
}

pub(super) fn size_text<'de, D: Deserializer<'de>>(d: D) -> Result<Spanned<String>, D::Error> {
    Spanned::<Text<true>>::deserialize(d).map(unwrap_text)
}

pub(super) fn option_size_text<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Spanned<String>>, D::Error> {
    size_text(d).map(Some)
}

/// A list of `[[NAME]]` tables, whose error for a single `[NAME]` table says which to write;
/// serde's says "invalid type: map, expected a sequence".
pub(crate) fn entries<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    name: &'static str,
) -> Result<Vec<T>, D::Error> {
    struct V<T>(&'static str, std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(
                f,
                "a list of tables: write each one as [[{}]], not [{}]",
                self.0, self.0
            )
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = seq.next_element()? {
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V(name, std::marker::PhantomData))
}

pub(super) fn option_choice<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    choice(d).map(Some)
}
