//! The vocabulary of student-facing text: a language ([`Lang`]), a fixed text in both languages
//! ([`Text`]), a formatted line in both ([`Line`]) and the words of an input problem ([`Words`]).
//!
//! The ground floor of the crate: it imports nothing of it, and every module that says something
//! to the student imports it. The tables that fill these types live in [`crate::messages`].

/// Language of student-facing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Lang {
    /// 日本語 (default).
    #[default]
    Ja,
    /// English.
    En,
}

/// A text in both languages.
#[derive(Debug, Clone, Copy)]
pub struct Text {
    /// Japanese.
    pub ja: &'static str,
    /// English.
    pub en: &'static str,
}

impl Text {
    /// The text in `lang`.
    pub fn get(self, lang: Lang) -> &'static str {
        match lang {
            Lang::Ja => self.ja,
            Lang::En => self.en,
        }
    }
}

/// A [`Text`] from its Japanese and English (for the tables' `const`s).
pub(crate) const fn t(ja: &'static str, en: &'static str) -> Text {
    Text { ja, en }
}

/// What an input problem says was expected or found, in both languages; JSON values, JSON paths
/// and field names inside it are the file's own and not translated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Words {
    /// Japanese.
    pub ja: String,
    /// English (also the language-neutral text the graders' findings quote).
    pub en: String,
}

// ends with (`lab::labs::ActSummary::lines`). Values (names, UIDs, times, outcomes, field
// names) are not translated: they are the words of the cluster and the evidence.

/// A line in both languages, already formatted; `lab::labs::Ui` prints the one of its
/// language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Japanese.
    pub ja: String,
    /// English.
    pub en: String,
}

impl Line {
    /// The line in `lang`.
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::Ja => &self.ja,
            Lang::En => &self.en,
        }
    }
}

impl From<String> for Line {
    /// A line already in the reader's language (e.g. one built from other lines).
    fn from(s: String) -> Line {
        Line {
            ja: s.clone(),
            en: s,
        }
    }
}

impl From<Text> for Line {
    fn from(t: Text) -> Line {
        Line {
            ja: t.ja.to_owned(),
            en: t.en.to_owned(),
        }
    }
}

/// `line!(name(arg: T, …) => "ja {arg}", "en {arg}")` defines `pub fn name(arg: T, …) -> Line`.
macro_rules! line {
    ($(#[$m:meta])* $name:ident($($arg:ident: $ty:ty),* $(,)?) => $ja:literal, $en:literal) => {
        $(#[$m])*
        pub fn $name($($arg: $ty),*) -> Line {
            Line { ja: format!($ja), en: format!($en) }
        }
    };
}
pub(crate) use line;
